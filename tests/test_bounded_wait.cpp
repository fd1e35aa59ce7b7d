// rrfp-wait (Mode::BoundedWait): the rule's decisions, step by step on the
// arbiter, and its completion under random durations in the simulator.
#include <gtest/gtest.h>

#include <algorithm>

#include "codelets/cost_model.hpp"
#include "hints/csv.hpp"
#include "hints/generators.hpp"
#include "hints/list_sched.hpp"
#include "sched/arbiter.hpp"
#include "sim/scenario.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {

// 1F1B, 3 devices, 6 microbatches, no in-flight slack (caps 3, 2, 1).
// Orders (B = fused backward):
//   device 0: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5
//   device 1: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5
//   device 2: F0 B0 F1 B1 F2 B2 ...
// Every call below is one the simulator or the StarPU policy would make, with
// the clock passed explicitly. Passes take 1 unit, except F(0,2), which is
// slow: device 1 then has B(1,1) ready while the hint wants F(1,2) next, the
// 1F1B case where readiness-first loses to the fixed order.
Hint one_f_one_b_3x6() {
  HintParams p;
  p.stages = 3;
  p.microbatches = 6;
  p.split = 0;
  return gen_1f1b(p);
}

struct Walk {
  Hint h = one_f_one_b_3x6();
  const TaskGraph& g = *h.graph;
  int F(int s, int m) const { return g.find(Kind::F, s, m); }
  int B(int s, int m) const { return g.find(Kind::BW, s, m); }
  Arbiter a;
  static ArbiterOptions options(double ratio, int slack, double horizon) {
    ArbiterOptions o;
    o.mode = Mode::BoundedWait;
    o.inflight_slack = slack;
    o.wait = {ratio, horizon};
    return o;
  }
  explicit Walk(double ratio, int slack = 0, double horizon = kDefaultWaitHorizon)
      : a(h, options(ratio, slack, horizon)) {
    for (int m = 0; m < 6; ++m) a.on_ready(F(0, m), 0);
  }
  void finish(int task, double t, std::initializer_list<int> now_ready) {
    a.on_finish(task, t);
    for (int r : now_ready) a.on_ready(r, t);
  }
  // t = 0..6: F(0,2) starts at 2 and is still running at 6, when B(2,1)
  // ends and makes B(1,1) ready.
  // start_f02 = false: device 0 has not asked for work since t=2 (a worker
  // late to poll), so F(0,2) has not started.
  void to_t6(bool start_f02 = true) {
    ASSERT_EQ(a.take(0, 0), F(0, 0));
    finish(F(0, 0), 1, {F(1, 0)});
    ASSERT_EQ(a.take(0, 1), F(0, 1));
    ASSERT_EQ(a.take(1, 1), F(1, 0));
    finish(F(0, 1), 2, {F(1, 1)});
    finish(F(1, 0), 2, {F(2, 0)});
    if (start_f02) {
      ASSERT_EQ(a.take(0, 2), F(0, 2));  // slow
    }
    ASSERT_EQ(a.take(1, 2), F(1, 1));
    ASSERT_EQ(a.take(2, 2), F(2, 0));
    finish(F(1, 1), 3, {F(2, 1)});
    finish(F(2, 0), 3, {B(2, 0)});
    ASSERT_EQ(a.take(1, 3), -1);  // wants B(1,0): not ready, and nothing else is
    ASSERT_EQ(a.take(2, 3), B(2, 0));
    finish(B(2, 0), 4, {B(1, 0)});
    ASSERT_EQ(a.take(2, 4), F(2, 1));
    ASSERT_EQ(a.take(1, 4), B(1, 0));  // B of stage 1 now gets an estimate: 1
    finish(F(2, 1), 5, {B(2, 1)});
    finish(B(1, 0), 5, {B(0, 0)});
    ASSERT_EQ(a.take(2, 5), B(2, 1));
    ASSERT_EQ(a.take(1, 5), -1);  // wants F(1,2); B(1,1) is not ready yet
    finish(B(2, 1), 6, {B(1, 1)});
  }
};

}  // namespace

TEST(BoundedWait, WaitsForAPredictedTaskThenTakesIt) {
  for (bool late : {false, true}) {  // F(0,2) ends inside the wait budget, or after it
    SCOPED_TRACE(late);
    Walk w(2.0);
    Arbiter& a = w.a;
    w.to_t6();
    // Device 1 prefers F(1,2), whose input F(0,2) is running (predicted:
    // overdue, so any moment), device 2 wants F(2,2) next, and B(1,1) is
    // ready (1 unit): it waits, at most 2 x 1 units.
    EXPECT_EQ(a.take(1, 6), -1);
    EXPECT_DOUBLE_EQ(a.wake_at(1), 8.0);
    EXPECT_EQ(a.waits(), 1);
    EXPECT_EQ(a.take(1, 7), -1);  // still inside the budget
    if (!late) {
      w.finish(w.F(0, 2), 7.5, {w.F(1, 2)});
      EXPECT_EQ(a.take(1, 7.5), w.F(1, 2));
    } else {
      // The budget is spent: the device gives up on F(1,2) for good.
      EXPECT_EQ(a.take(1, 8), w.B(1, 1));
      EXPECT_EQ(a.wake_at(1), -1);
      w.finish(w.B(1, 1), 9, {w.B(0, 1)});
      EXPECT_EQ(a.take(1, 9), -1);  // F(1,2) still missing, nothing else ready: idle, not waiting
      EXPECT_EQ(a.wake_at(1), -1);
      EXPECT_EQ(a.waits(), 1);
    }
  }
}

TEST(BoundedWait, ReadinessFirstWhereTheRuleDoesNotApply) {
  {
    // Readiness-first takes B(1,1) here; so does rrfp-wait with no budget.
    Walk w(0.0);
    w.to_t6();
    EXPECT_EQ(w.a.take(1, 6), w.B(1, 1));
    EXPECT_EQ(w.a.waits(), 0);
  }
  {
    // Never for a task whose input has not started: its arrival cannot be
    // predicted, and waiting for it could wait for ourselves. However large
    // the ratio, device 1 takes B(1,1).
    Walk w(100.0);
    w.to_t6(false);
    EXPECT_EQ(w.a.take(1, 6), w.B(1, 1));
    EXPECT_EQ(w.a.wake_at(1), -1);
    EXPECT_EQ(w.a.waits(), 0);
  }
}

// The horizon: F(0,2) starts late, at 5.8, so F(1,2) is predicted at 6.8
// (F of stage 0 took 1 unit), 0.8 of B(1,1)'s expected unit away: inside
// the budget of 2 units but beyond the default horizon of half a unit, so
// device 1 takes B(1,1); with a horizon of 1 it waits.
TEST(BoundedWait, WaitsOnlyForATaskPredictedWithinTheHorizon) {
  for (double horizon : {kDefaultWaitHorizon, 1.0}) {
    SCOPED_TRACE(horizon);
    Walk w(2.0, 0, horizon);
    w.to_t6(false);
    ASSERT_EQ(w.a.take(0, 5.8), w.F(0, 2));
    if (horizon < 0.8) {
      EXPECT_EQ(w.a.take(1, 6), w.B(1, 1));
      EXPECT_EQ(w.a.waits(), 0);
    } else {
      EXPECT_EQ(w.a.take(1, 6), -1);
      EXPECT_DOUBLE_EQ(w.a.wake_at(1), 8.0);
      EXPECT_EQ(w.a.waits(), 1);
    }
  }
}

// Instead of a W of the drain (after the device's last forward), rrfp-wait
// waits for a task predicted before the W would end. ZB-H1, 3 devices, 4
// microbatches, unit passes; device 1's order ends B(1,2) W(1,0) B(1,3)
// W(1,1) ... after its last F. F(2,3) takes 1 + `late`, so B(1,3)'s input
// B(2,3) starts late and is predicted (and comes) `late` units after W(1,0)
// ends at t = 10, and W(1,1) is ready. Late by up to most of a W the
// device waits and keeps the hint's order (mid-pipeline W's wait only up to
// 0.4 of a W: the next test); late by more than a W it runs W(1,1) first,
// as rrfp does. The order is the greedy zero-bubble one that defers W into
// every gap (the zoo's zb-h1 before 2026-12-05): ListSchedOptions with no
// held cap.
TEST(BoundedWait, InsteadOfADrainsWItWaitsForATaskDueBeforeTheWWouldEnd) {
  Hint h;
  h.name = "greedy-zb";
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::linear(3, 4, true));
  ListSchedOptions lso;
  lso.cap = {3, 2, 1};
  lso.held_cap = {4, 4, 4};
  list_schedule(h, lso);
  const TaskGraph& g = *h.graph;
  const int b13 = g.find(Kind::B, 1, 3), w11 = g.find(Kind::W, 1, 1), f23 = g.find(Kind::F, 2, 3);
  for (double late : {0.3, 0.5, 0.9, 1.2}) {
    SCOPED_TRACE(late);
    SimOptions o;
    o.mode = Mode::BoundedWait;
    o.duration = [&](int id) { return id == f23 ? 1 + late : 1.0; };
    SimResult r = simulate(h, o);
    ASSERT_TRUE(r.complete) << r.stuck;
    const auto& ex = r.executed[1];
    const auto pos = [&](int id) { return std::find(ex.begin(), ex.end(), id) - ex.begin(); };
    if (late < 1) {
      EXPECT_LT(pos(b13), pos(w11));
      EXPECT_GE(r.waits, 1);
      EXPECT_NEAR(r.start[b13], 10 + late, 1e-9);
    } else {
      EXPECT_GT(pos(b13), pos(w11));
      EXPECT_NEAR(r.start[w11], 10, 1e-9);
    }
  }
}

// The drain rule is for devices of one model stage. A V (device 0 holds
// stages 0 and 3, device 1 stages 1 and 2), 2 microbatches, unit passes
// except stage 3's input backwards (X each) and device 0's W's (0.2), so
// device 1's passes do not depend on X. When B(2,0) ends at t = 6,
// device 1's hint wants B(2,1), predicted X later (B(3,1) began at 6),
// and has W(2,0) ready, after its last forward. At X = 0.6 a device of one
// stage would wait (inside the drain's horizon of a whole W); a V device
// only waits inside the filler horizon (0.4), so it runs W(2,0) at 6. At
// X = 0.3 it waits: the case reaches the rule.
TEST(BoundedWait, ATwoStageDeviceHasNoDrainOfItsOwn) {
  Hint h = import_csv(
      "0F0,0F1,3F0,3B0,3F1,3B1,3W0,3W1,0B0,0B1,0W0,0W1\n"
      "1F0,2F0,1F1,2F1,2B0,2B1,2W0,2W1,1B0,1B1,1W0,1W1\n");
  const TaskGraph& g = *h.graph;
  const int b21 = g.find(Kind::B, 2, 1), w20 = g.find(Kind::W, 2, 0);
  ASSERT_GE(b21, 0);
  ASSERT_GE(w20, 0);
  for (double x : {0.3, 0.6}) {
    SCOPED_TRACE(x);
    SimOptions o;
    o.mode = Mode::BoundedWait;
    o.duration = [&](int id) {
      const Task& t = g.task(id);
      if (t.device == 0 && t.kind == Kind::W) return 0.2;  // device 0 runs W(3,0) before F(3,1) is due
      return t.stage == 3 && t.kind == Kind::B ? x : 1.0;
    };
    SimResult r = simulate(h, o);
    ASSERT_TRUE(r.complete) << r.stuck;
    ASSERT_NEAR(r.end[g.find(Kind::B, 2, 0)], 6, 1e-9);
    if (x < 0.4) {
      EXPECT_GE(r.waits, 1);
      EXPECT_NEAR(r.start[b21], 6 + x, 1e-9);
    } else {
      EXPECT_EQ(r.waits, 0);
      EXPECT_NEAR(r.start[w20], 6, 1e-9);
    }
  }
}

// The zoo's ZB-H1 (4 devices, 8 microbatches, unit passes) defers the last
// device's W(3,0) until after I(3,3): when I(3,0) ends at t = 5 the hint
// wants F(3,1), whose input F(2,1) runs long (2 + late). No other device
// waits for F(3,1) (its consumer I(3,1) is on the same device), and no W
// of stage 3 has finished yet (its forward's mean stands in). Late by 0.3
// the device waits for F(3,1); late by 0.9 it gives up at the deadline,
// 0.8 of the W after it began waiting, and runs W(3,0).
TEST(BoundedWait, InsteadOfAWItWaitsForTheHintsNextPassWhoeverConsumesIt) {
  HintParams p;
  p.stages = 4;
  p.microbatches = 8;
  p.split = 1;
  Hint h = gen_zb_h1(p);
  const TaskGraph& g = *h.graph;
  const int f21 = g.find(Kind::F, 2, 1), f31 = g.find(Kind::F, 3, 1), w30 = g.find(Kind::W, 3, 0);
  for (double late : {0.3, 0.9}) {
    SCOPED_TRACE(late);
    SimOptions o;
    o.mode = Mode::BoundedWait;
    o.duration = [&](int id) { return id == f21 ? 2 + late : 1.0; };
    SimResult r = simulate(h, o);
    ASSERT_TRUE(r.complete) << r.stuck;
    const auto& ex = r.executed[3];
    const auto pos = [&](int id) { return std::find(ex.begin(), ex.end(), id) - ex.begin(); };
    EXPECT_GE(r.waits, 1);
    if (late < 0.8) {
      EXPECT_LT(pos(f31), pos(w30));
      EXPECT_NEAR(r.start[f31], 5 + late, 1e-9);
    } else {
      EXPECT_GT(pos(f31), pos(w30));
      EXPECT_NEAR(r.start[w30], 5.8, 1e-9);
    }
  }
}

// Never for a task that adds to the same weight gradients as the ready
// one: on StarPU the ready one already holds the stage's commuting
// accumulator, so the other cannot arrive first. The last stage runs B2
// before B1, so device 1 has B(1,2) ready while its hint wants B(1,1),
// whose input B(2,1) has started and is predicted within the horizon
// (stage 2's backwards are fast) and which device 0 waits for next: every
// other condition of a wait holds (without this rule the device waits).
TEST(BoundedWait, NeverWaitsForATaskTheReadyOneLocksOut) {
  Hint h = import_csv(
      "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n"
      "1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3\n"
      "2F0,2B0,2F1,2F2,2F3,2B2,2B1,2B3\n");
  const TaskGraph& g = *h.graph;
  const int b11 = g.find(Kind::BW, 1, 1), b12 = g.find(Kind::BW, 1, 2);
  ASSERT_GE(b12, 0);
  SimOptions o;
  o.mode = Mode::BoundedWait;
  o.duration = [&](int id) { return g.task(id).stage == 2 && g.task(id).kind == Kind::BW ? 0.2 : 1.0; };
  o.comm.latency_s = 0.05;  // B(1,2) arrives after B(2,1) has started: its end is predicted
  SimResult r = simulate(h, o);
  ASSERT_TRUE(r.complete) << r.stuck;
  const auto& ex = r.executed[1];
  const auto pos = [&](int id) { return std::find(ex.begin(), ex.end(), id) - ex.begin(); };
  EXPECT_EQ(r.waits, 0);
  EXPECT_LT(pos(b12), pos(b11));
}

// rrfp-wait against rrfp on the same drawn durations: where the rule does
// not apply the executed orders are equal, decision for decision.
static void expect_readiness_first(int slack, double ratio) {
  for (const char* hint : {"1f1b", "zb-h1", "zbv", "gpipe"})
    for (int seed = 1; seed <= 12; ++seed) {
      Hint h = make_hint(hint, {4, 8, 0, -1, 0});
      Scenario sc;
      sc.cost.var = parse_variability("lognormal:0.6");
      sc.cost.seed = seed;
      sc.inflight_slack = slack;
      sc.mode = Mode::ReadinessFirst;
      ScenarioResult rf = run_scenario(h, sc);
      sc.mode = Mode::BoundedWait;
      sc.wait.ratio = ratio;
      ScenarioResult bw = run_scenario(h, sc);
      EXPECT_EQ(bw.sim.executed, rf.sim.executed) << hint << " seed " << seed;
      EXPECT_EQ(bw.sim.waits, 0);
    }
}

// Slack is memory for readiness-first to run forwards early; the rule waits
// only in slack-0 runs, so with slack the orders are rrfp's.
TEST(BoundedWait, WithInflightSlackItDecidesLikeReadinessFirst) { expect_readiness_first(2, 100); }

// Waiting is the only difference: with a zero budget the orders are rrfp's.
TEST(BoundedWait, RatioZeroIsReadinessFirst) { expect_readiness_first(0, 0); }

TEST(BoundedWait, CompletesEveryHintWithinItsCapsUnderRandomDurations) {
  long waits = 0;
  for (const char* hint : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zbv", "chimera", "hanayo", "dualpipev"})
    for (const char* var : {"lognormal:0.6", "multimodal:1.0", "straggler:1:4:0.2"})
      for (int slack : {0, 0, 2})  // the rule applies at slack 0
        for (int seed = 1; seed <= 25; ++seed) {
          HintParams p{4, 8, std::string(hint) == "interleaved-1f1b" ? 2 : 0, -1, 0};
          Hint h = make_hint(hint, p);
          Scenario sc;
          sc.cost.var = parse_variability(var);
          sc.cost.link_ms = 0.3;
          sc.cost.link_jitter = 0.9;
          sc.cost.seed = seed;
          sc.mode = Mode::BoundedWait;
          sc.inflight_slack = slack;
          sc.wait = {4.0, 4.0};  // waits often, to exercise the rule
          ScenarioResult r = run_scenario(h, sc);
          ASSERT_TRUE(r.sim.complete) << hint << " " << var << " seed " << seed << ":\n" << r.sim.stuck;
          for (int d = 0; d < h.devices(); ++d) EXPECT_LE(r.sim.peak_inflight[d], r.sim.inflight_cap[d]);
          waits += r.sim.waits;
        }
  EXPECT_GT(waits, 100);  // the rule was exercised, not bypassed
}

TEST(BoundedWait, RejectsABadRatio) {
  Hint h = gen_1f1b({2, 2, 0, 0, 0});
  EXPECT_THROW(Arbiter(h, ArbiterOptions{Mode::BoundedWait, 0, {}, {}, {-1}}), SpecError);
  ArbiterOptions o;
  o.mode = Mode::BoundedWait;
  o.wait.horizon = -0.5;
  EXPECT_THROW(Arbiter(h, o), SpecError);
  EXPECT_EQ(parse_mode("rrfp-wait"), Mode::BoundedWait);
  EXPECT_STREQ(mode_policy_name(Mode::BoundedWait), "rrfp-wait");
}
