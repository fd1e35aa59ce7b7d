#include "train/cuda_stream.hpp"

#include <stdexcept>

#include "train/model.hpp"

#ifdef RRFP_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace rrfp::train {

bool torch_built_with_cuda() {
#ifdef RRFP_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

#ifdef RRFP_TORCH_CUDA
struct WorkerStream::Guard {
  c10::cuda::CUDAStreamGuard g;
  Guard(int device, void* stream)
      : g(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), static_cast<c10::DeviceIndex>(device))) {}
};
#else
struct WorkerStream::Guard {};
#endif

WorkerStream::WorkerStream(int device, void* stream) {
  if (device < 0) return;
#ifdef RRFP_TORCH_CUDA
  guard_ = std::make_unique<Guard>(device, stream);
#else
  (void)stream;
  throw std::runtime_error("a pass on a CUDA worker, but this rrfp's LibTorch has no CUDA (-DRRFP_CUDA=ON)");
#endif
}

WorkerStream::~WorkerStream() = default;

void to_device(Microbatch& mb, const torch::Device& device) {
  if (device.is_cpu()) return;
  for (torch::Tensor* t : {&mb.tokens, &mb.targets, &mb.patches, &mb.patch_mask})
    if (t->defined()) *t = t->to(device);
}

}  // namespace rrfp::train
