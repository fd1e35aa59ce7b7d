#include "sim/async_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"
#include "hints/replicate.hpp"

namespace rrfp {

namespace {

// Both methods: `hint(steps)` is the order of that many steps of
// `accumulate` microbatches a replica (`replicas` of them, whose copies of
// a stage update together); one step (a flush each) against `window`.
AsyncEstimate estimate(const char* method, int stages, int accumulate, int window, int replicas, Scenario sc,
                       double update_s, int gate_lag, const std::function<Hint(int steps)>& hint) {
  if (stages < 1 || accumulate < 1 || window < 1)
    throw SpecError(fmt::format("{} needs stages, --accumulate and --window of at least 1 (got {}, {}, {})", method,
                                stages, accumulate, window));
  if (!(update_s >= 0) || std::isinf(update_s)) throw SpecError("--update-ms must be a finite number >= 0");
  if (replicas < 1) throw SpecError(fmt::format("{} needs --data-parallel of at least 1 (got {})", method, replicas));
  if (sc.cost.durations && !sc.cost.durations->fused && !sc.cost.durations->mixed)  // both methods fuse B and W
    throw SpecError(fmt::format("{} runs fused backwards; the --durations trace holds split ones: record it without "
                                "--split",
                                method));
  if (static_cast<long long>(accumulate) * replicas > kMaxMicrobatches)
    throw SpecError(fmt::format("--accumulate {} x --data-parallel {} microbatches a step is over the limit of {}",
                                accumulate, replicas, kMaxMicrobatches));
  (void)grouped_microbatches(accumulate * replicas, window);  // the window fits, before any step is simulated
  sc.update_group = accumulate * replicas;  // a step: every replica's share
  sc.update_s = update_s;
  sc.gate_lag = gate_lag;
  auto one = [&](int steps, double& step_s, double& bubble, int& peak) {
    const ScenarioResult r = run_scenario(hint(steps), sc);
    if (!r.sim.complete) throw SpecError(fmt::format("{} with {} steps: {}", method, steps, r.sim.stuck));
    step_s = r.sim.makespan / steps;
    bubble = r.sim.bubble_ratio;
    peak = *std::max_element(r.sim.peak_inflight.begin(), r.sim.peak_inflight.end());
  };
  AsyncEstimate e;
  one(1, e.sync_step_s, e.sync_bubble, e.sync_peak_inflight);
  one(window, e.async_step_s, e.async_bubble, e.async_peak_inflight);
  return e;
}

}  // namespace

AsyncEstimate simulate_paci(int stages, int accumulate, int window, Scenario sc, double update_s,
                            int data_parallel) {
  return estimate("PACI", stages, accumulate, window, data_parallel, std::move(sc), update_s, 0, [&](int steps) {
    const Hint one = make_hint("1f1b", {stages, grouped_microbatches(accumulate, steps), 0, 0, 0});
    return replicate(one, data_parallel, accumulate);  // numbered step by step, as the trainer's window
  });
}

AsyncEstimate simulate_amdp(int stages, int directions, int accumulate, int window, Scenario sc, double update_s) {
  return estimate("AMDP", stages, accumulate, window, 1, std::move(sc), update_s, 2,
                  [&](int steps) { return amdp_hint(stages, directions, accumulate, steps); });
}

}  // namespace rrfp
