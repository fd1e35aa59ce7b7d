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
};

inline const std::vector<std::string>& grid_hints() {
  static const std::vector<std::string> h = {"gpipe", "1f1b", "zb-h1", "interleaved-1f1b", "zbv"};
  return h;
}

inline const std::vector<GridVariability>& grid_variability() {
  static const std::vector<GridVariability> v = {
      {"none", "none"},
      {"lognormal:0.3", "lognormal:0.3"},
      {"lognormal:0.6", "lognormal:0.6"},
      {"multimodal", "multimodal:1.0"},
      {"straggler", "straggler:1:4:0.1"},
      {"link-jitter", "none", 0.5, 0.9},
  };
  return v;
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
