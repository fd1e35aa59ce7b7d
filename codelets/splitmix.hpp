// SplitMix64 (Steele, Lea, Flood 2014), the project's one seeded mixer: the
// cost model's counter-based draws, the corpus generator's seed expansion
// and bench's message payloads all use it.
#pragma once

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

}  // namespace rrfp
