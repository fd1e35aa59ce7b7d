// A simulated run as a Timeline, so it can be written as a Chrome trace and
// drawn exactly like a real run's trace.
#pragma once

#include "plot/timeline.hpp"
#include "sim/simulator.hpp"

namespace rrfp {

// `time_unit_s` scales simulated time units to seconds (1e-3: a unit is 1 ms).
Timeline to_timeline(const Hint& hint, const SimResult& r, const std::string& title, double time_unit_s = 1e-3);

}  // namespace rrfp
