// Parameter checks shared by the generators, so every hint rejects bad
// values with the same clear message instead of failing deep inside.
#include <fmt/format.h>

#include "hints/generators.hpp"

namespace rrfp {

bool resolve_split(const HintParams& p, bool default_split) { return p.split < 0 ? default_split : p.split != 0; }

void check_params(const HintParams& p, const char* hint) {
  if (p.stages < 1) throw SpecError(fmt::format("hint '{}': --stages must be at least 1 (got {})", hint, p.stages));
  if (p.stages > kMaxStages)
    throw SpecError(fmt::format("hint '{}': --stages must be at most {} (got {})", hint, kMaxStages, p.stages));
  if (p.microbatches < 1)
    throw SpecError(fmt::format("hint '{}': --microbatches must be at least 1 (got {})", hint, p.microbatches));
  if (p.microbatches > kMaxMicrobatches)
    throw SpecError(
        fmt::format("hint '{}': --microbatches must be at most {} (got {})", hint, kMaxMicrobatches, p.microbatches));
  if (p.chunks < 0) throw SpecError(fmt::format("hint '{}': --chunks must be positive (got {})", hint, p.chunks));
  if (p.chunks > kMaxStages)
    throw SpecError(fmt::format("hint '{}': --chunks must be at most {} (got {})", hint, kMaxStages, p.chunks));
  if (p.split < -1 || p.split > 1) throw SpecError(fmt::format("hint '{}': bad split flag {}", hint, p.split));
  if (p.waves < 0) throw SpecError(fmt::format("hint '{}': --waves must be positive (got {})", hint, p.waves));
}

void check_no_chunks(const HintParams& p, const char* hint) {
  if (p.chunks > 1)
    throw SpecError(fmt::format("hint '{}' puts one model stage on each device; --chunks {} is not supported "
                                "(use interleaved-1f1b or zbv)",
                                hint, p.chunks));
}

void require_split(const HintParams& p, const char* hint) {
  if (p.split == 0)
    throw SpecError(fmt::format("hint '{}' needs the split backward (B and W as separate tasks); it cannot be fused",
                                hint));
}

}  // namespace rrfp
