// `rrfp sim sweep`: vary one parameter and measure the fixed-order/readiness-
// first makespan ratio (mean over seeds) in simulation.
#pragma once

#include <string>
#include <vector>

#include "hints/generators.hpp"
#include "sim/scenario.hpp"

namespace rrfp {

struct SweepPoint {
  double value;
  double speedup;        // mean over seeds of fixed / rrfp makespan
  double min_speedup, max_speedup;
};

// param: sigma (lognormal sigma; variability becomes lognormal:VALUE),
// bandwidth (Gbit/s, 0 infinite, as --bandwidth-gbps), link-ms, link-jitter, microbatches, stages, slack.
// The policy compared with rrfp-fixed is sc.mode (rrfp when that is Strict).
std::vector<SweepPoint> sweep(const std::string& hint, HintParams p, Scenario sc, const std::string& param,
                              const std::vector<double>& values, int seeds);

}  // namespace rrfp
