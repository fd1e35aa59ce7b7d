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

class SyntheticPasses {
 public:
  // One error slot per call (member * tasks + task id), in managed memory.
  explicit SyntheticPasses(int calls);
  ~SyntheticPasses();
  SyntheticPasses(const SyntheticPasses&) = delete;
  SyntheticPasses& operator=(const SyntheticPasses&) = delete;

  // Enqueues pass `call` on io.stream (a CUDA worker's TaskIo).
  void launch(int call, const TaskIo& io, double seconds, std::uint64_t in_key, std::uint64_t out_key);
  // Before a run: no error anywhere.
  void reset();
  // After a run: per call, the first byte of its input that differed from
  // its producer's payload, or -1.
  std::vector<long long> first_bad_byte() const;

  // The three as run_bench's hooks (BenchConfig::device_passes).
  DevicePasses hooks();

 private:
  int calls_;
  long long* bad_ = nullptr;
};

}  // namespace rrfp::gpu
