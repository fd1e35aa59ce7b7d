#include "sim/async_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"

namespace rrfp {

AsyncEstimate simulate_paci(int stages, int accumulate, int window, Scenario sc, double update_s) {
  if (stages < 1 || accumulate < 1 || window < 1)
    throw SpecError(fmt::format("PACI needs stages, --accumulate and --window of at least 1 (got {}, {}, {})", stages,
                                accumulate, window));
  if (update_s < 0) throw SpecError("--update-ms must not be negative");
  sc.update_group = accumulate;
  sc.update_s = update_s;
  auto one = [&](int microbatches, double& step_s, double& bubble, int& peak, int per) {
    const Hint h = make_hint("1f1b", {stages, microbatches, 0, 0, 0});
    const ScenarioResult r = run_scenario(h, sc);
    if (!r.sim.complete) throw SpecError(fmt::format("1f1b with {} microbatches: {}", microbatches, r.sim.stuck));
    step_s = r.sim.makespan / per;
    bubble = r.sim.bubble_ratio;
    peak = *std::max_element(r.sim.peak_inflight.begin(), r.sim.peak_inflight.end());
  };
  AsyncEstimate e;
  one(accumulate, e.sync_step_s, e.sync_bubble, e.sync_peak_inflight, 1);
  one(accumulate * window, e.async_step_s, e.async_bubble, e.async_peak_inflight, window);
  return e;
}

AsyncEstimate simulate_amdp(int stages, int directions, int accumulate, int window, Scenario sc, double update_s) {
  if (stages < 1 || accumulate < 1 || window < 1)
    throw SpecError(fmt::format("AMDP needs stages, --accumulate and --window of at least 1 (got {}, {}, {})", stages,
                                accumulate, window));
  if (update_s < 0) throw SpecError("--update-ms must not be negative");
  sc.update_group = accumulate;
  sc.update_s = update_s;
  sc.gate_lag = 2;
  auto one = [&](int groups, double& step_s, double& bubble, int& peak) {
    const Hint h = amdp_hint(stages, directions, accumulate, groups);
    const ScenarioResult r = run_scenario(h, sc);
    if (!r.sim.complete) throw SpecError(fmt::format("amdp with {} steps: {}", groups, r.sim.stuck));
    step_s = r.sim.makespan / groups;
    bubble = r.sim.bubble_ratio;
    peak = *std::max_element(r.sim.peak_inflight.begin(), r.sim.peak_inflight.end());
  };
  AsyncEstimate e;
  one(1, e.sync_step_s, e.sync_bubble, e.sync_peak_inflight);
  one(window, e.async_step_s, e.async_bubble, e.async_peak_inflight);
  return e;
}

}  // namespace rrfp
