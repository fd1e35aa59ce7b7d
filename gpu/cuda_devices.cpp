#include "gpu/cuda_devices.hpp"

#include <cuda_runtime.h>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"

namespace rrfp::gpu {

int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::string no_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
  return n == 0 ? "the CUDA driver reports no device" : "";
}

void require_cuda_devices(int n) {
  const int have = cuda_device_count();
  if (have < n)
    throw SpecError(fmt::format("{} CUDA device(s) needed but {} found: {}", n, have,
                                have == 0 ? no_device_reason() : "use fewer devices"));
}

}  // namespace rrfp::gpu
