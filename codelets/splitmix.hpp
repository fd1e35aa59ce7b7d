// SplitMix64 (Steele, Lea, Flood 2014), the project's one seeded mixer: the
// cost model's counter-based draws, the corpus generator's seed expansion
// and bench's message payloads all use it. And its one byte hash, FNV-1a.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrfp {

// The mixer of x + golden ratio: a hash of x.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The generator: the next value of the stream whose state is `s`.
inline std::uint64_t splitmix64_next(std::uint64_t& s) {
  const std::uint64_t r = splitmix64(s);
  s += 0x9e3779b97f4a7c15ULL;
  return r;
}

// FNV-1a, 64 bits: the checkpoints' checksum and the --data fingerprint.
inline std::uint64_t fnv1a64(const char* p, std::size_t n, std::uint64_t basis = 0xcbf29ce484222325ULL) {
  std::uint64_t h = basis;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
  return h;
}

}  // namespace rrfp
