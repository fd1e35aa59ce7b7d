// The grid of issue 16: hints x variability x in-flight slack, on which the
// default readiness-first policy must never lose to the fixed order. Shared
// by the simulated and the StarPU runs of perf/bench_policy_grid.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codelets/cost_model.hpp"
#include "codelets/duration_trace.hpp"
#include "hints/generators.hpp"

namespace rrfp::perf {

struct GridVariability {
  std::string name;  // column label
  std::string spec;  // cost-model variability (codelets/cost_model.hpp)
  double link_units = 0, link_jitter = 0;  // mean link delay in units, relative jitter
  // Trace-driven columns: a `rrfp train --trace` file per backward form
  // (codelets/duration_trace.hpp), resampled to the grid's stages.
  std::string fused_trace, split_trace;
};

inline const std::vector<std::string>& grid_hints() {
  static const std::vector<std::string> h = {"gpipe", "1f1b", "zb-h1", "interleaved-1f1b", "zbv"};
  return h;
}

inline const std::vector<GridVariability>& grid_variability() {
  static const std::vector<GridVariability> v = {
      {"none", "none", 0, 0, "", ""},
      {"lognormal:0.3", "lognormal:0.3", 0, 0, "", ""},
      {"lognormal:0.6", "lognormal:0.6", 0, 0, "", ""},
      {"multimodal", "multimodal:1.0", 0, 0, "", ""},
      {"straggler", "straggler:1:4:0.1", 0, 0, "", ""},
      {"link-jitter", "none", 0.5, 0.9, "", ""},
  };
  return v;
}

// The trace-driven columns from perf/traces/ (perf/RESULTS.md says how they
// were recorded): real mm-tiny and variable-length gpt-tiny training.
inline std::vector<GridVariability> grid_trace_columns(const std::string& dir) {
  if (dir.empty()) return {};
  return {{"trace:mm-tiny", "none", 0, 0, dir + "/mm-tiny_1f1b.json", dir + "/mm-tiny_zb-h1.json"},
          {"trace:gpt-varlen", "none", 0, 0, dir + "/gpt-tiny-varlen_1f1b.json", dir + "/gpt-tiny-varlen_zb-h1.json"}};
}

// A grid hint at this depth (interleaved 1F1B with 2 chunks per device).
inline Hint grid_hint(const std::string& name, int stages, int microbatches) {
  return make_hint(name, {stages, microbatches, name == "interleaved-1f1b" ? 2 : 0, -1, 0});
}

// One trace per file, read once.
inline std::shared_ptr<const DurationTrace> grid_trace_file(const std::string& path) {
  static std::map<std::string, std::shared_ptr<const DurationTrace>> cache;
  auto& t = cache[path];
  if (!t) t = std::make_shared<DurationTrace>(read_duration_trace(path));
  return t;
}

// The cost model of column `v` for a seed; `split`: the hint's backward
// form, which picks the trace of a trace-driven column.
inline CostOptions grid_cost(const GridVariability& v, bool split, int seed, double unit_ms) {
  CostOptions c;
  if (!v.fused_trace.empty()) c.durations = grid_trace_file(split ? v.split_trace : v.fused_trace);
  c.unit_ms = unit_ms;
  c.var = parse_variability(v.spec);
  c.link_ms = v.link_units * unit_ms;
  c.link_jitter = v.link_jitter;
  c.seed = static_cast<std::uint64_t>(seed);
  return c;
}

inline const std::vector<int>& grid_slacks() {
  static const std::vector<int> s = {0, 2, 4};
  return s;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace rrfp::perf
