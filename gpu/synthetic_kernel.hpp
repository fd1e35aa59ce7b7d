// The kernel of a synthetic pass on a CUDA worker (gpu/synthetic_pass.hpp),
// behind a plain C++ signature so that only this file's .cu sees nvcc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrfp::gpu {

// Enqueues one block on `stream` (a cudaStream_t) that compares every byte
// of `in` (may be null) with the payload of `in_key` (runtime/payload.hpp),
// keeping the first differing byte's index in *bad (atomic minimum; start
// it at -1), writes the payload of `out_key` into `out` (may be null), then
// spins until `ns` nanoseconds have passed since it started (the GPU's
// global timer). Throws std::runtime_error when the launch fails.
void launch_synthetic_pass(void* stream, const void* in, void* out, std::size_t bytes, std::uint64_t in_key,
                           std::uint64_t out_key, std::uint64_t ns, long long* bad);

}  // namespace rrfp::gpu
