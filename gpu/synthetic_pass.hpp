// The synthetic workload of `rrfp bench --cuda` on CUDA workers: each pass
// is one kernel on its worker's StarPU stream (gpu/synthetic_kernel.hpp)
// that checks every byte of the message it reads against its producer's
// payload, writes its own, and holds the stream for the pass's drawn
// duration. The codelet returns after the launch (STARPU_CUDA_ASYNC): the
// task ends, and the policy hears of it, when the kernel ends.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/bench.hpp"

namespace rrfp::gpu {

class SyntheticPasses final : public DevicePasses {
 public:
  // One error slot per call (member * tasks + task id), in managed memory.
  explicit SyntheticPasses(int calls);
  ~SyntheticPasses();
  SyntheticPasses(const SyntheticPasses&) = delete;
  SyntheticPasses& operator=(const SyntheticPasses&) = delete;

  void launch(int call, const TaskIo& io, double seconds, std::uint64_t in_key, std::uint64_t out_key) override;
  void reset() override;
  std::vector<long long> first_bad_byte() const override;

 private:
  int calls_;
  long long* bad_ = nullptr;
};

}  // namespace rrfp::gpu
