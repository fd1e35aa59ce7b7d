// PACI and AMDP in the simulator (docs/async.md). PACI: synchronous 1F1B
// drains every step and updates each stage after its last backward; PACI
// runs a window of K steps as one 1F1B graph of K*M microbatches, each
// stage updating after every M of its backwards. AMDP: the same with its
// multi-directional order (hints/gen_amdp.hpp), against that order drained
// every step (synchronous bidirectional training), a forward of step k
// held until its stage's update of step k-2. Same cost model, caps and policy.
#pragma once

#include "sim/scenario.hpp"

namespace rrfp {

struct AsyncEstimate {
  double sync_step_s = 0;   // one flush a step (PACI: 1F1B; AMDP: its order over M microbatches)
  double async_step_s = 0;  // no flush: the window's makespan / K
  double sync_bubble = 0, async_bubble = 0;
  int sync_peak_inflight = 0, async_peak_inflight = 0;  // max over devices
};

// PACI with data_parallel > 1: that many replicas of its 1F1B, on devices
// of their own, each taking `accumulate` of a step's data_parallel x
// accumulate microbatches (replicate(hint, D, A), as `rrfp train --async
// paci --data-parallel D` splits them); one update per stage and step over
// every copy's backwards, paid on every device holding the stage.
// Throws SpecError for stages, accumulate, window or data_parallel < 1,
// or a run that stalls.
AsyncEstimate simulate_paci(int stages, int accumulate, int window, Scenario sc, double update_s,
                            int data_parallel = 1);
// Also throws SpecError for a placement AMDP cannot make (gen_amdp.hpp).
AsyncEstimate simulate_amdp(int stages, int directions, int accumulate, int window, Scenario sc, double update_s);

}  // namespace rrfp
