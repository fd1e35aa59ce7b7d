// PACI and AMDP in the simulator (sim/async_model.hpp): no flush means a
// shorter step and a smaller bubble within the schedule's in-flight caps,
// the update's cost lengthens the step (device time on every holder of the
// stage, after the backward's send), AMDP's gate holds forwards two steps
// back, and bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/pipeline_spec.hpp"
#include "hints/gen_amdp.hpp"
#include "sim/async_model.hpp"
#include "sim/simulator.hpp"

namespace rrfp {

TEST(AsyncModel, NoFlushShortensTheStepAtTheSameInflightPeak) {
  for (int P : {4, 8, 16}) {
    Scenario sc;
    const AsyncEstimate e = simulate_paci(P, 4, 8, sc, 0);
    EXPECT_LT(e.async_step_s, e.sync_step_s) << P;
    EXPECT_LT(e.async_bubble, e.sync_bubble) << P;
    // 1F1B's caps: P - s in flight on device s, fewer when a step has fewer microbatches.
    EXPECT_EQ(e.async_peak_inflight, P) << P;
    EXPECT_EQ(e.sync_peak_inflight, std::min(P, 4)) << P;
    // The flush costs (P - 1) of M + P - 1 slots: deeper pipelines gain more.
    if (P == 16) {
      EXPECT_GT(e.sync_step_s / e.async_step_s, 2.0);
    }
  }
}

TEST(AsyncModel, TheUpdateLengthensBothSteps) {
  Scenario sc;
  const AsyncEstimate free = simulate_paci(4, 4, 4, sc, 0), paid = simulate_paci(4, 4, 4, sc, 0.01);
  EXPECT_GE(paid.sync_step_s, free.sync_step_s + 0.01 - 1e-12);
  EXPECT_GT(paid.async_step_s, free.async_step_s);
}

// The update is device time after the backward has sent its gradient, not
// a longer backward: the stages' updates of a flushed 1F1B step overlap
// each other, so the step grows by one update (stage 0's, the last), not
// by one per stage.
TEST(AsyncModel, AFlushedStepPaysOneUpdateNotOnePerStage) {
  for (int P : {4, 8, 16}) {
    const AsyncEstimate free = simulate_paci(P, 4, 2, Scenario{}, 0), paid = simulate_paci(P, 4, 2, Scenario{}, 0.1);
    EXPECT_NEAR(paid.sync_step_s - free.sync_step_s, 0.1, 1e-9) << P;
  }
}

TEST(AsyncModel, BadInputIsRefused) {
  Scenario sc;
  EXPECT_THROW(simulate_paci(0, 4, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 0, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 0, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 4, sc, -1), SpecError);
}

TEST(AsyncModel, AmdpWithoutAFlushShortensTheStep) {
  for (auto [P, dirs] : {std::pair{4, 2}, {8, 2}, {8, 4}, {16, 4}}) {
    Scenario sc;
    sc.cost.var = parse_variability("lognormal:0.3");
    const AsyncEstimate e = simulate_amdp(P, dirs, 2 * dirs, 8, sc, 0);
    EXPECT_LT(e.async_step_s, e.sync_step_s) << P << " " << dirs;
    EXPECT_LT(e.async_bubble, e.sync_bubble) << P << " " << dirs;
    EXPECT_LE(e.async_peak_inflight, P * dirs / 2) << "the order's cap";
  }
  EXPECT_THROW(simulate_amdp(6, 4, 8, 4, Scenario{}, 0), SpecError);
  EXPECT_THROW(simulate_amdp(4, 2, 3, 4, Scenario{}, 0), SpecError);
  EXPECT_THROW(simulate_amdp(4, 2, 4, 4, Scenario{}, -1), SpecError);
}

TEST(AsyncModel, TheGateHoldsForwardsUntilTheUpdateTwoStepsBack) {
  const int P = 4, G = 4, K = 6;
  const Hint h = amdp_hint(P, 2, G, K);
  const TaskGraph& g = *h.graph;
  for (double sigma : {0.0, 0.6}) {  // sigma 0: unit costs, ties everywhere
    Scenario sc;
    sc.cost.var = parse_variability(sigma > 0 ? "lognormal:0.6" : "none");
    sc.update_group = G;
    sc.gate_lag = 2;
    sc.update_s = 0.05;  // on both devices of the stage's mirror group
    const ScenarioResult r = run_scenario(h, sc);
    ASSERT_TRUE(r.sim.complete) << r.sim.stuck;
    for (int id = 0; id < g.size(); ++id) {
      const Task& t = g.task(id);
      const int k = t.mb / G;
      auto last_backward = [&](int group) {
        double end = 0;
        for (int m = group * G; m < (group + 1) * G; ++m) end = std::max(end, r.sim.end[g.backward_of(t.stage, m)]);
        return end;
      };
      // Held until the update after that backward has ended.
      if (t.kind == Kind::F && k >= 2) {
        EXPECT_GE(r.sim.start[id], last_backward(k - 2) + sc.update_s - 1e-12) << g.label(id);
      }
      if (t.kind == Kind::BW && k >= 1) {
        EXPECT_GE(r.sim.start[id], last_backward(k - 1) + sc.update_s - 1e-12) << g.label(id);
      }
    }
    sc.gate_lag = 0;
    sc.update_group = 0;
    const ScenarioResult free = run_scenario(h, sc);
    EXPECT_LE(free.sim.makespan, r.sim.makespan + 1e-12) << "the gate only holds tasks back";
    // Every holder of a stage pays each of its K updates: P stages x 2 copies.
    double busy = 0, busy_free = 0;
    for (double b : r.sim.busy) busy += b;
    for (double b : free.sim.busy) busy_free += b;
    EXPECT_NEAR(busy - busy_free, P * 2 * K * sc.update_s, 1e-9);
  }
}

}  // namespace rrfp
