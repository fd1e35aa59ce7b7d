#include <fmt/format.h>

#include "hints/generators.hpp"

namespace rrfp {

const std::vector<HintInfo>& hint_registry() {
  static const std::vector<HintInfo> reg = {
      {"gpipe", {}, "GPipe: every forward, then every backward (peak in-flight = M)", gen_gpipe},
      {"1f1b", {"bf"}, "1F1B (PipeDream-Flush): warm-up forwards, then one forward one backward; fused backward",
       gen_1f1b},
  };
  return reg;
}

Hint make_hint(const std::string& name, const HintParams& p) {
  for (const HintInfo& h : hint_registry()) {
    bool match = h.name == name;
    for (const std::string& a : h.aliases) match = match || a == name;
    if (match) {
      Hint out = h.make(p);
      if (name != h.name) out.name = name;
      return out;
    }
  }
  std::string known;
  for (const HintInfo& h : hint_registry()) known += (known.empty() ? "" : ", ") + h.name;
  throw SpecError(fmt::format("unknown hint '{}' (known: {}; or csv:PATH)", name, known));
}

}  // namespace rrfp
