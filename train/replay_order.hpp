// A sequential order for a hint's tasks: sorted by start time in a unit-cost
// strict replay (ties by device). It respects the hint's per-device order and
// every dependency, so running the passes in it is a valid one-thread
// execution of the schedule.
#pragma once

#include <vector>

#include "hints/hint.hpp"

namespace rrfp::train {

// Throws SpecError when the hint deadlocks under strict replay.
std::vector<int> replay_order(const Hint& h, double* predicted_bubble = nullptr);

}  // namespace rrfp::train
