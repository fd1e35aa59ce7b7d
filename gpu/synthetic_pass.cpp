#include "gpu/synthetic_pass.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "gpu/synthetic_kernel.hpp"

namespace rrfp::gpu {

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace

SyntheticPasses::SyntheticPasses(int calls) : calls_(calls) {
  if (calls < 1) throw std::invalid_argument("SyntheticPasses needs at least one call");
  check(cudaMallocManaged(&bad_, sizeof(long long) * static_cast<std::size_t>(calls)), "cudaMallocManaged");
  reset();
}

SyntheticPasses::~SyntheticPasses() { cudaFree(bad_); }

void SyntheticPasses::reset() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (int i = 0; i < calls_; ++i) bad_[i] = -1;
}

void SyntheticPasses::launch(int call, const TaskIo& io, double seconds, std::uint64_t in_key,
                             std::uint64_t out_key) {
  if (io.cuda_device < 0 || !io.stream) throw std::logic_error("a synthetic CUDA pass on a CPU worker");
  if (call < 0 || call >= calls_) throw std::out_of_range("synthetic pass: call out of range");
  const auto ns = static_cast<std::uint64_t>(seconds > 0 ? seconds * 1e9 : 0);
  launch_synthetic_pass(io.stream, io.in, io.out, io.bytes, in_key, out_key, ns, bad_ + call);
}

std::vector<long long> SyntheticPasses::first_bad_byte() const {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return std::vector<long long>(bad_, bad_ + calls_);
}

}  // namespace rrfp::gpu
