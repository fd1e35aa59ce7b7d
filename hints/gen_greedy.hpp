// Cost-aware greedy schedule, in the spirit of zero-bubble's heuristic
// scheduler: the pipeline is simulated with the profiled durations and
// link delay, and each device, when it becomes free, takes among the tasks
// whose inputs have arrived an input backward (B or BW: it unblocks the
// device upstream), else a forward (one of a new microbatch only while the
// device's in-flight count is under the cap, the activation-memory budget),
// else a W (no successor: it fills what would be a bubble). Works on any placement (linear, interleaved,
// V-shape); the result is an ordinary hint.
#pragma once

#include <functional>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

struct GreedyOptions {
  std::vector<int> cap;                   // per device, >= 1: forwards whose backward is not done
  std::function<double(int task)> duration;  // seconds; required
  double link_s = 0;                      // delay of an edge that crosses devices
};

// Fills hint.order (hint.graph must be set), names it "greedy" and
// finalizes it. Throws SpecError for a cap below 1 or when the caps stall
// every device.
void greedy_schedule(Hint& hint, const GreedyOptions& opt);

}  // namespace rrfp
