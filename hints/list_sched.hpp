// Greedy unit-time list scheduler: builds hint orders by simulating the
// pipeline step by step (every task costs one step) and letting each free
// device pick among its ready tasks by kind priority B > F > W, forwards
// limited by an in-flight cap. Deferring W to steps where nothing else is
// ready is exactly how the zero-bubble schedules fill bubbles.
#pragma once

#include <functional>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

struct ListSchedOptions {
  // Per device: forwards started whose backward is not done may not exceed
  // this (the activation-memory budget, in microbatch-stages).
  std::vector<int> cap;
  // Tie-break among ready tasks of one kind class; smaller goes first.
  // Default: smaller microbatch, then larger stage (push work downstream).
  std::function<long long(const Task&)> key;
};

// Fills hint.order (hint.graph must be set) and finalizes it. Throws
// SpecError if the caps make the pipeline stall (a cap below 1).
void list_schedule(Hint& hint, const ListSchedOptions& opt);

}  // namespace rrfp
