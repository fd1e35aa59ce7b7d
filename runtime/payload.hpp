// Synthetic message payloads of `rrfp bench`: the producer fills its output
// buffer with a stream keyed by (iteration seed, producer task, member); the
// consumer recomputes it and checks every byte, so a message StarPU
// delivered late, twice, to the wrong task or torn fails the run.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrfp {

std::uint64_t payload_key(std::uint64_t seed, int producer_task, int member);
void fill_payload(void* dst, std::size_t bytes, std::uint64_t key);
// Index of the first byte that differs from fill_payload(key), or -1.
long check_payload(const void* src, std::size_t bytes, std::uint64_t key);

}  // namespace rrfp
