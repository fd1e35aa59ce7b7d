#include "train/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "graph/pipeline_spec.hpp"

namespace rrfp::train {

void GptConfig::validate() const {
  if (vocab < 2 || vocab > 256) throw SpecError(fmt::format("vocab {} out of range [2, 256]", vocab));
  if (d_model < 1 || d_model > 65536) throw SpecError(fmt::format("--d-model {} out of range", d_model));
  if (heads < 1 || d_model % heads != 0)
    throw SpecError(fmt::format("--heads {} must be positive and divide --d-model {}", heads, d_model));
  if (layers < 1 || layers > kMaxStages) throw SpecError(fmt::format("--layers {} out of range", layers));
  if (seq_len < 1 || seq_len > 1 << 20) throw SpecError(fmt::format("--seq-len {} out of range", seq_len));
  if (!mlp_widths.empty() && static_cast<int>(mlp_widths.size()) != layers)
    throw SpecError(fmt::format("--mlp-widths has {} widths for {} blocks (--layers): give one per block",
                                mlp_widths.size(), layers));
  for (size_t i = 0; i < mlp_widths.size(); ++i)
    if (mlp_widths[i] < 0 || mlp_widths[i] > 1 << 20)
      throw SpecError(fmt::format("--mlp-widths: block {} has width {} (0 = attention only, else from 1 to {})",
                                  i, mlp_widths[i], 1 << 20));
}

GptConfig gpt_small_config() {
  GptConfig c;
  c.d_model = 512;
  c.heads = 8;
  c.layers = 8;
  c.seq_len = 256;
  return c;
}

bool GptConfig::uniform_mlp() const {
  for (int w : mlp_widths)
    if (w != 4 * d_model) return false;
  return true;
}

std::vector<int> parse_int_list(const std::string& s, const char* flag) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, comma - at);
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::out_of_range&) {
      throw SpecError(fmt::format("{} '{}': {} is out of range", flag, s, item));
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw SpecError(fmt::format("{} '{}': '{}' is not an integer (expected a comma-separated list)", flag, s, item));
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

std::vector<StageRange> partition_from_counts(const std::vector<int>& counts, int layers) {
  const int S = static_cast<int>(counts.size());
  if (S < 1) throw SpecError("a partition needs at least one stage");
  std::vector<StageRange> r(S);
  int at = 0;
  for (int s = 0; s < S; ++s) {
    if (counts[s] < 0 || counts[s] > layers - at)  // also no int overflow below
      throw SpecError(fmt::format("partition: stage {} has {} blocks, {} of the model's {} (--layers) are left", s,
                                  counts[s], layers - at, layers));
    if (counts[s] == 0 && s > 0 && s + 1 < S)
      throw SpecError(fmt::format("partition: stage {} holds no block (only the first stage, with the embedding, "
                                  "and the last, with the head, may)",
                                  s));
    r[s] = {at, at + counts[s]};
    at += counts[s];
  }
  if (S == 1 && counts[0] != layers) throw SpecError("partition: one stage must hold every block");
  if (at != layers)
    throw SpecError(fmt::format("partition covers {} blocks, the model has {} (--layers)", at, layers));
  return r;
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
