// Greedy unit-time list scheduler: builds hint orders by simulating the
// pipeline step by step (every task costs one step) and letting each free
// device pick among its ready tasks by kind priority B > F > W, forwards
// limited by an in-flight cap (forward to backward) and a held cap (forward
// to W). Deferring W to steps where nothing else is
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
  // Per device, split backward: forwards started whose W is not done may
  // not exceed this either, so W is deferred into bubbles but not to the
  // end of the step (W still reads what F saved). Empty: no such cap (B > F
  // > W then defers every W it can, up to the end of the step).
  std::vector<int> held_cap;
  // Tie-break among ready tasks of one kind class; smaller goes first.
  // Default: smaller microbatch, then larger stage (push work downstream).
  std::function<long long(const Task&)> key;
  // Asynchronous updates (docs/async.md), group > 0: each stage updates
  // after every `group` consecutive microbatches' W/BW, and the next
  // group's W/BW come after the update. gate_lag > 0: a forward of group k
  // waits for the update of group k - gate_lag on its stage (AMDP: 2). The
  // update itself takes no step here; the order respects both, so a strict
  // executor of it cannot wait on an update that waits on it.
  int group = 0;
  int gate_lag = 0;
};

// Fills hint.order (hint.graph must be set) and finalizes it. Throws
// SpecError if the caps make the pipeline stall (a cap below 1).
void list_schedule(Hint& hint, const ListSchedOptions& opt);

}  // namespace rrfp
