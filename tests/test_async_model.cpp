// PACI and AMDP in the simulator (sim/async_model.hpp): no flush means a
// shorter step and a smaller bubble within the schedule's in-flight caps,
// the update's cost lengthens the step (device time on every holder of the
// stage, after the backward's send), AMDP's gate holds forwards two steps
// back, and bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "graph/pipeline_spec.hpp"
#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"
#include "hints/replicate.hpp"
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

// A stage held by two devices (AMDP's mirror groups) applies its last
// update after the mirror reduction, not beside it: with a slow link the
// reduction ends last, and the update still adds to the step.
TEST(AsyncModel, AReplicatedStageUpdatesAfterItsReduction) {
  Scenario sc;
  sc.comm.latency_s = 0.008;
  const AsyncEstimate free = simulate_amdp(4, 2, 4, 1, sc, 0), paid = simulate_amdp(4, 2, 4, 1, sc, 0.005);
  EXPECT_GE(paid.sync_step_s, free.sync_step_s + 0.005 - 1e-12);
}

TEST(AsyncModel, BadInputIsRefused) {
  Scenario sc;
  EXPECT_THROW(simulate_paci(0, 4, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 0, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 0, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 4, sc, -1), SpecError);
  SimOptions o;  // an update time without update groups: never silently dropped
  o.duration = [](int) { return 1.0; };
  o.update_s = 0.1;
  EXPECT_THROW(simulate(amdp_hint(4, 2, 4, 1), o), SpecError);
}

// PACI with data-parallel replicas (--data-parallel D): with equal costs
// every copy runs its replica's 1F1B as the single pipeline does, and the
// stage's one update a step (over every copy's backwards, on every holder)
// costs what one replica's did.
TEST(AsyncModel, ReplicasOfEqualCostsStepAsOnePipeline) {
  for (int P : {2, 4})
    for (double update_s : {0.0, 0.5e-3}) {
      const AsyncEstimate one = simulate_paci(P, 4, 4, Scenario{}, update_s);
      for (int D : {2, 4}) {
        const AsyncEstimate e = simulate_paci(P, 4, 4, Scenario{}, update_s, D);
        EXPECT_NEAR(e.sync_step_s, one.sync_step_s, 1e-12) << P << " " << D;
        EXPECT_NEAR(e.async_step_s, one.async_step_s, 1e-12) << P << " " << D << " update " << update_s;
        EXPECT_EQ(e.async_peak_inflight, one.async_peak_inflight);
      }
    }
  EXPECT_THROW(simulate_paci(4, 4, 4, Scenario{}, 0, 0), SpecError);
}

// With varying costs the copies of a stage update together, so each step
// waits for the slowest replica: more replicas, a longer step on average
// (independent copies would keep one pipeline's), and no flush still
// shortens it.
TEST(AsyncModel, ReplicasWaitForTheSlowestAtEachUpdate) {
  double one = 0, four = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    Scenario sc;
    sc.cost.var = parse_variability("lognormal:0.6");
    sc.cost.seed = seed;
    one += simulate_paci(4, 4, 4, sc, 0.5e-3).async_step_s;
    const AsyncEstimate e = simulate_paci(4, 4, 4, sc, 0.5e-3, 4);
    four += e.async_step_s;
    EXPECT_LT(e.async_step_s, e.sync_step_s) << seed;
  }
  EXPECT_GT(four, one * 1.03);
}

// A replicated stage's copies reduce every step's gradients before the
// step's update, over the link: the next step's backwards wait for it, so
// a window pays one reduction a step, not one at its end.
TEST(AsyncModel, ReplicasReduceBeforeEveryUpdate) {
  Scenario sc;
  sc.comm.bandwidth_Bps = 1e8;
  sc.memory.weight_bytes.assign(4, 1e6);  // 10 ms a reduction, 3 ms of passes a microbatch
  const AsyncEstimate one = simulate_paci(4, 4, 4, sc, 0), two = simulate_paci(4, 4, 4, sc, 0, 2);
  EXPECT_NEAR(two.sync_step_s, one.sync_step_s + 0.01, 1e-9) << "a flushed step reduces after its last pass";
  EXPECT_GT(two.async_step_s, one.async_step_s + 0.005) << "reduced once a window, it would add 2.5 ms a step";
  EXPECT_LT(two.async_step_s, two.sync_step_s) << "the next step's forwards overlap the reduction";
  // With an update to pay, each holder's starts after the group's last
  // backward and the reduction after it.
  const int A = 4, D = 2, K = 4;
  Scenario paid = sc;
  paid.update_group = A * D;
  paid.update_s = 0.5e-3;
  const Hint h = replicate(make_hint("1f1b", {4, A * K, 0, 0, 0}), D, A);
  const ScenarioResult r = run_scenario(h, paid);
  ASSERT_TRUE(r.sim.complete) << r.sim.stuck;
  EXPECT_EQ(r.sim.updates.size(), 4u * K * D) << "every stage, step and holder";
  for (const auto& u : r.sim.updates) {
    const int stage = u.update / K, group = u.update % K;
    double last = 0;
    for (int m = group * A * D; m < (group + 1) * A * D; ++m)
      last = std::max(last, r.sim.end[h.graph->backward_of(stage, m)]);
    EXPECT_GE(u.start, last + 0.01 - 1e-9) << "update " << u.update << " on device " << u.device;
  }
  EXPECT_THROW(simulate_paci(4, 4, 4, sc, 0, 1 << 30), SpecError) << "A x D over the limit, not an overflow";
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
    // Each update runs once on each of the stage's 2 holders, after the
    // group's last backward and between that device's passes; it is done
    // when the later holder is.
    std::vector<double> done(static_cast<size_t>(P) * K, -1);
    std::vector<int> runs(done.size(), 0);
    for (const auto& u : r.sim.updates) {
      const int stage = u.update / K, group = u.update % K;
      ++runs[u.update];
      done[u.update] = std::max(done[u.update], u.end);
      EXPECT_NEAR(u.end - u.start, sc.update_s, 1e-12);
      for (int m = group * G; m < (group + 1) * G; ++m)
        EXPECT_GE(u.start, r.sim.end[g.backward_of(stage, m)] - 1e-12) << "update " << u.update;
      for (int id : r.sim.executed[u.device])
        EXPECT_TRUE(r.sim.end[id] <= u.start + 1e-12 || r.sim.start[id] >= u.end - 1e-12)
            << g.label(id) << " overlaps update " << u.update << " on device " << u.device;
    }
    for (int u = 0; u < P * K; ++u) EXPECT_EQ(runs[u], 2) << "update " << u;
    int later = 0;  // held tasks whose first holder's update ended before the other's
    for (int id = 0; id < g.size(); ++id) {
      const Task& t = g.task(id);
      const int k = t.mb / G;
      const int after = t.kind == Kind::F ? k - 2 : t.kind == Kind::BW ? k - 1 : -1;
      if (after < 0) continue;
      const int u = t.stage * K + after;
      EXPECT_GE(r.sim.start[id], done[u] - 1e-12) << g.label(id) << " started before update " << u << " ended";
      double first = 1e300;
      for (const auto& x : r.sim.updates)
        if (x.update == u) first = std::min(first, x.end);
      later += first < done[u] - 1e-9;
    }
    if (sigma > 0) {
      EXPECT_GT(later, 0) << "no held task waited for a second holder: the test would not see an early release";
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
