#include "train/config.hpp"

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"

namespace rrfp::train {

void GptConfig::validate() const {
  if (vocab < 2 || vocab > 256) throw SpecError(fmt::format("vocab {} out of range [2, 256]", vocab));
  if (d_model < 1 || d_model > 65536) throw SpecError(fmt::format("--d-model {} out of range", d_model));
  if (heads < 1 || d_model % heads != 0)
    throw SpecError(fmt::format("--heads {} must be positive and divide --d-model {}", heads, d_model));
  if (layers < 1 || layers > kMaxStages) throw SpecError(fmt::format("--layers {} out of range", layers));
  if (seq_len < 1 || seq_len > 1 << 20) throw SpecError(fmt::format("--seq-len {} out of range", seq_len));
}

std::vector<StageRange> partition_blocks(int layers, int stages) {
  if (stages < 1) throw SpecError(fmt::format("need at least one stage, got {}", stages));
  if (stages > layers)
    throw SpecError(fmt::format("{} model stages but the model has only {} blocks (each stage needs one; "
                                "use more --layers or fewer stages/chunks)",
                                stages, layers));
  std::vector<StageRange> r(stages);
  const int base = layers / stages, extra = layers % stages;
  int at = 0;
  for (int s = 0; s < stages; ++s) {
    r[s].first = at;
    at += base + (s < extra ? 1 : 0);
    r[s].last = at;
  }
  return r;
}

}  // namespace rrfp::train
