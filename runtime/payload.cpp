#include "runtime/payload.hpp"

#include <cstring>

#include "codelets/splitmix.hpp"

namespace rrfp {

std::uint64_t payload_key(std::uint64_t seed, int producer_task, int member) {
  return splitmix64(seed * 0x100000001b3ULL ^ (static_cast<std::uint64_t>(producer_task) << 8) ^ member);
}

void fill_payload(void* dst, std::size_t bytes, std::uint64_t key) {
  auto* p = static_cast<unsigned char*>(dst);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t w = splitmix64_next(key);
    std::memcpy(p + i, &w, bytes - i < 8 ? bytes - i : 8);
  }
}

long check_payload(const void* src, std::size_t bytes, std::uint64_t key) {
  const auto* p = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t w = splitmix64_next(key);
    const std::size_t k = bytes - i < 8 ? bytes - i : 8;
    if (std::memcmp(p + i, &w, k) != 0)
      for (std::size_t j = 0; j < k; ++j)
        if (p[i + j] != reinterpret_cast<const unsigned char*>(&w)[j]) return static_cast<long>(i + j);
  }
  return -1;
}

}  // namespace rrfp
