// PACI in the simulator (docs/async.md): synchronous 1F1B drains every
// step and updates each stage after its last backward; PACI runs a window
// of K steps as one 1F1B graph of K*M microbatches, each stage updating
// after every M of its backwards. Same cost model, caps and policy.
#pragma once

#include "sim/scenario.hpp"

namespace rrfp {

struct AsyncEstimate {
  double sync_step_s = 0;   // 1F1B, M microbatches, one flush a step
  double async_step_s = 0;  // PACI: the window's makespan / K
  double sync_bubble = 0, async_bubble = 0;
  int sync_peak_inflight = 0, async_peak_inflight = 0;  // max over devices
};

// Throws SpecError for stages, accumulate or window < 1, or a run that stalls.
AsyncEstimate simulate_paci(int stages, int accumulate, int window, Scenario sc, double update_s);

}  // namespace rrfp
