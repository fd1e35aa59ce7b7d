#include "train/cuda_stream.hpp"

#include <cstdint>
#include <mutex>
#include <stdexcept>

#include "train/memory.hpp"
#include "train/model.hpp"

#ifdef RRFP_TORCH_CUDA
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
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
  // torch keeps a cuBLAS(Lt) workspace per (handle, stream), made on the
  // stream's first matmul: make it here, outside any pass's charge, once
  // per worker thread and stream (a CUDA worker keeps its stream).
  thread_local void* primed = nullptr;
  if (primed != stream) {
    at::cuda::getCurrentCUDABlasHandle();
    at::cuda::getCUDABlasLtWorkspace();
    primed = stream;
  }
#else
  (void)stream;
  throw std::runtime_error("a pass on a CUDA worker, but this rrfp's LibTorch has no CUDA (-DRRFP_CUDA=ON)");
#endif
}

WorkerStream::~WorkerStream() = default;

void wait_for_current_stream(int device) {
  if (device < 0) return;
#ifdef RRFP_TORCH_CUDA
  c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).synchronize();
#endif
}

void install_cuda_memory_accounting() {
#ifdef RRFP_TORCH_CUDA
  static std::once_flag once;
  std::call_once(once, [] {
    namespace A = c10::cuda::CUDACachingAllocator;
    // Runs under the allocator's lock: takes only memory.cpp's table lock,
    // which is never held while calling into an allocator.
    A::attachAllocatorTraceTracker([](const A::TraceEntry& e) {
      const auto* key = reinterpret_cast<const void*>(e.addr_);
      if (e.action_ == A::TraceEntry::ALLOC) charge_this_thread(key, static_cast<std::int64_t>(e.size_));
      else if (e.action_ == A::TraceEntry::FREE_REQUESTED) credit_charge(key);
    });
  });
#endif
}

void to_device(Microbatch& mb, const torch::Device& device) {
  if (device.is_cpu()) return;
  for (torch::Tensor* t : {&mb.tokens, &mb.targets, &mb.patches, &mb.patch_mask})
    if (t->defined()) *t = t->to(device);
}

}  // namespace rrfp::train
