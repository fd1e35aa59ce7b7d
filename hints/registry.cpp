#include <fmt/format.h>

#include <algorithm>

#include "hints/csv.hpp"
#include "hints/gen_zoo.hpp"

namespace rrfp {

namespace {

// A CSV fixes its own dimensions; a run's flag that names another value is
// an error, never silently replaced. 0 (or split -1) means "not given".
void check_csv_agrees(const Hint& h, const HintParams& p, const std::string& path) {
  const PipelineSpec& s = h.spec();
  const int D = h.devices(), per_device = s.stages / D;
  const std::string dims = fmt::format("{} ranks (devices), {} model stages, {} microbatches", D, s.stages,
                                       s.microbatches);
  auto disagree = [&](const std::string& flag) {
    return SpecError(fmt::format("hint csv:{} has {}, but {}: drop the flag or make it agree", path, dims, flag));
  };
  if (p.stages != 0 && p.stages != D) throw disagree(fmt::format("--stages {} asks for {} devices", p.stages, p.stages));
  if (p.microbatches != 0 && p.microbatches != s.microbatches)
    throw disagree(fmt::format("--microbatches is {}", p.microbatches));
  if (p.chunks != 0 && (s.stages % D != 0 || p.chunks != per_device))
    throw disagree(fmt::format("--chunks {} asks for {} model stages per device", p.chunks, p.chunks));
  if (p.chunks != 0)  // v stages on every device, not v on average
    for (int d = 0; d < D; ++d)
      if (static_cast<int>(s.stages_on(d).size()) != p.chunks)
        throw disagree(fmt::format("--chunks {} asks for {} model stages on every device, and device {} holds {}",
                                   p.chunks, p.chunks, d, s.stages_on(d).size()));
  bool any_split = false, any_fused = false;
  for (int st = 0; st < s.stages; ++st)
    for (int m = 0; m < s.microbatches; ++m) (s.is_split(st, m) ? any_split : any_fused) = true;
  if (p.split == 1 && any_fused) throw disagree("--split asks for a split backward and the file has full backwards");
  if (p.split == 0 && any_split) throw disagree("--fused asks for a fused backward and the file has split backwards");
}

}  // namespace

const std::vector<HintInfo>& hint_registry() {
  static const std::vector<HintInfo> reg = {
      {"gpipe", {}, "GPipe: every forward, then every backward (peak in-flight = M)", gen_gpipe},
      {"1f1b", {"bf"}, "1F1B (PipeDream-Flush): warm-up forwards, then one forward one backward; fused backward",
       gen_1f1b},
      {"zb-h1", {"bfw"},
       "ZB-H1: split backward, 1F1B warm-up, B before F before W, W deferred into gaps (1F1B memory)", gen_zb_h1},
      {"zb-h2", {}, "ZB-H2: ZB-H1 with up to 2(S-d)-1 warm-up forwards filling the start-up bubble (2x memory)",
       gen_zb_h2},
      {"interleaved-1f1b", {"interleaved"},
       "Megatron interleaved 1F1B: --chunks v model stages per device (stage s on device s mod S); M multiple of S",
       gen_interleaved_1f1b},
      {"zbv", {"zb-v"}, "ZB-V: V-shape, 2 chunks per device (stages d and 2S-1-d), split backward, near-zero bubble",
       gen_zbv},
      {"chimera", {}, "Chimera: two pipelines in opposite directions, M/2 microbatches each, 2 weight copies",
       gen_chimera},
      {"chimera-asym", {},
       "asymmetric Chimera: 2S-1 stages, the two directions cut them at interleaved points (independent per-direction "
       "partitions), 2 weight copies",
       gen_chimera_asym},
      {"hanayo", {}, "Hanayo: wave-like placement, --waves W (2WS stages), no weight replication", gen_hanayo},
      {"dualpipev", {}, "DualPipeV (DeepSeek): V-shape, overlapped F&B steps, mixed split/fused backward; M >= 2S",
       gen_dualpipev},
  };
  return reg;
}

std::string canonical_hint_name(const std::string& name) {
  for (const HintInfo& h : hint_registry())
    if (std::find(h.aliases.begin(), h.aliases.end(), name) != h.aliases.end()) return h.name;
  return name;
}

Hint make_hint(const std::string& name, const HintParams& p) {
  if (p.waves > 0 && name != "hanayo")  // ignored elsewhere, so a typo in the hint would go unnoticed
    throw SpecError(fmt::format("--waves applies to hint 'hanayo', not '{}'", name));
  if (is_csv_hint(name)) {
    if (name.size() == 4) throw SpecError("hint 'csv:' needs a file path (csv:PATH)");
    Hint h = import_csv_file(name.substr(4));
    check_csv_agrees(h, p, name.substr(4));
    return h;
  }
  const std::string canonical = canonical_hint_name(name);
  for (const HintInfo& h : hint_registry())
    if (h.name == canonical) {
      Hint out = h.make(p);
      if (name != h.name) out.name = name;
      return out;
    }
  std::string known;
  for (const HintInfo& h : hint_registry()) known += (known.empty() ? "" : ", ") + h.name;
  throw SpecError(fmt::format("unknown hint '{}' (known: {}; or csv:PATH)", name, known));
}

Hint make_hint(const std::string& name) {
  HintParams p;
  if (is_csv_hint(name)) p.stages = p.microbatches = 0;
  return make_hint(name, p);
}

}  // namespace rrfp
