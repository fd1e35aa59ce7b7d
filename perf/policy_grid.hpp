// The grid of issue 16: hints x variability x in-flight slack, on which the
// default readiness-first policy must never lose to the fixed order. Shared
// by the simulated and the StarPU runs of perf/bench_policy_grid.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

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
