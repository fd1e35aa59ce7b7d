// rrfp-wait (Mode::BoundedWait): the rule's decisions, step by step on the
// arbiter, and its completion under random durations in the simulator.
#include <gtest/gtest.h>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "sched/arbiter.hpp"
#include "sim/scenario.hpp"

using namespace rrfp;

namespace {

// 1F1B, 2 devices, 6 microbatches, in-flight slack 2: device 0's order is
// F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 (B = fused backward), device 1's
// F0 B0 F1 B1 ... Every step below is a call the simulator or the StarPU
// policy would make, with the clock passed explicitly.
struct Walk {
  Hint h = gen_1f1b({2, 6, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  int F(int s, int m) const { return g.find(Kind::F, s, m); }
  int B(int s, int m) const { return g.find(Kind::BW, s, m); }
};

void start_all(const Walk& w, Arbiter& a) {
  for (int m = 0; m < 6; ++m) a.on_ready(w.F(0, m), 0);
}

}  // namespace

TEST(BoundedWait, NeverWaitsForATaskWhoseInputsHaveNotStarted) {
  Walk w;
  // A huge ratio: only the "can it become ready on its own?" test can stop a wait.
  Arbiter a(w.h, ArbiterOptions{Mode::BoundedWait, 2, {}, {}, 100.0});
  start_all(w, a);
  ASSERT_EQ(a.take(0, 0), w.F(0, 0));
  a.on_finish(w.F(0, 0), 1);  // F of stage 0 now has an estimate: 1
  a.on_ready(w.F(1, 0), 1);
  ASSERT_EQ(a.take(0, 1), w.F(0, 1));
  ASSERT_EQ(a.take(1, 1), w.F(1, 0));
  a.on_finish(w.F(0, 1), 2);
  a.on_finish(w.F(1, 0), 2);
  a.on_ready(w.F(1, 1), 2);
  a.on_ready(w.B(1, 0), 2);
  // Device 0 prefers B0, whose input B(1,0) has not started: the
  // alternative F2 runs at once, however large the ratio.
  EXPECT_EQ(a.take(0, 2), w.F(0, 2));
  EXPECT_EQ(a.wake_at(0), -1);
  EXPECT_EQ(a.waits(), 0);
}

TEST(BoundedWait, WaitsForAPredictedTaskThenTakesIt) {
  for (double slow : {0.0, 5.0}) {  // B(1,1) on time, or late past the wait budget
    SCOPED_TRACE(slow);
    Walk w;
    Arbiter a(w.h, ArbiterOptions{Mode::BoundedWait, 2, {}, {}, 2.0});
    start_all(w, a);
    // t=0..2 as above; device 1 starts B(1,0) (2 units) at t=2.
    ASSERT_EQ(a.take(0, 0), w.F(0, 0));
    a.on_finish(w.F(0, 0), 1);
    a.on_ready(w.F(1, 0), 1);
    ASSERT_EQ(a.take(0, 1), w.F(0, 1));
    ASSERT_EQ(a.take(1, 1), w.F(1, 0));
    a.on_finish(w.F(0, 1), 2);
    a.on_finish(w.F(1, 0), 2);
    a.on_ready(w.F(1, 1), 2);
    a.on_ready(w.B(1, 0), 2);
    ASSERT_EQ(a.take(1, 2), w.B(1, 0));
    // B(1,0)'s duration is not known yet: no prediction, no wait.
    ASSERT_EQ(a.take(0, 2), w.F(0, 2));
    a.on_finish(w.F(0, 2), 3);
    a.on_ready(w.F(1, 2), 3);
    ASSERT_EQ(a.take(0, 3), w.F(0, 3));
    a.on_finish(w.B(1, 0), 4);  // BW of stage 1: 2 units
    a.on_finish(w.F(0, 3), 4);
    a.on_ready(w.B(0, 0), 4);
    a.on_ready(w.F(1, 3), 4);
    ASSERT_EQ(a.take(1, 4), w.F(1, 1));
    ASSERT_EQ(a.take(0, 4), w.B(0, 0));
    a.on_finish(w.F(1, 1), 5);
    a.on_ready(w.B(1, 1), 5);
    ASSERT_EQ(a.take(1, 5), w.B(1, 1));  // predicted to end at 5 + 2 = 7
    a.on_finish(w.B(0, 0), 6);
    // Device 0 prefers B1 (input predicted at 7, 1 unit away) over the
    // ready F4 (1 unit): 1 < 2 x 1, so it waits, at most until 6 + 2.
    EXPECT_EQ(a.take(0, 6), -1);
    EXPECT_DOUBLE_EQ(a.wake_at(0), 8.0);
    EXPECT_EQ(a.waits(), 1);
    EXPECT_EQ(a.take(0, 7), -1);  // still inside the budget
    if (slow == 0) {
      a.on_finish(w.B(1, 1), 7);
      a.on_ready(w.B(0, 1), 7);
      EXPECT_EQ(a.take(0, 7), w.B(0, 1));
    } else {
      // The budget is spent: the device gives up on B1 for good.
      EXPECT_EQ(a.take(0, 8), w.F(0, 4));
      EXPECT_EQ(a.wake_at(0), -1);
      a.on_finish(w.F(0, 4), 9);
      EXPECT_EQ(a.take(0, 9), -1);  // F5 is held by the cap; no second wait for B1
      EXPECT_EQ(a.wake_at(0), -1);
      EXPECT_EQ(a.waits(), 1);
      a.on_finish(w.B(1, 1), 10);
      a.on_ready(w.B(0, 1), 10);
      EXPECT_EQ(a.take(0, 10), w.B(0, 1));
    }
  }
}

TEST(BoundedWait, RatioZeroIsReadinessFirst) {
  // Waiting is the only difference: with a zero budget the executed orders
  // are readiness-first's, decision for decision.
  for (const char* hint : {"1f1b", "zb-h1", "zbv", "gpipe"})
    for (int seed = 1; seed <= 20; ++seed) {
      Hint h = make_hint(hint, {4, 8, 0, -1, 0});
      Scenario sc;
      sc.cost.var = parse_variability("lognormal:0.6");
      sc.cost.seed = seed;
      sc.mode = Mode::ReadinessFirst;
      ScenarioResult rf = run_scenario(h, sc);
      sc.mode = Mode::BoundedWait;
      sc.wait_ratio = 0;
      ScenarioResult bw = run_scenario(h, sc);
      EXPECT_EQ(bw.sim.executed, rf.sim.executed) << hint << " seed " << seed;
      EXPECT_EQ(bw.sim.waits, 0);
    }
}

TEST(BoundedWait, CompletesEveryHintWithinItsCapsUnderRandomDurations) {
  long waits = 0;
  for (const char* hint : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zbv", "chimera", "hanayo", "dualpipev"})
    for (const char* var : {"lognormal:0.6", "multimodal:1.0", "straggler:1:4:0.2"})
      for (int slack : {0, 2})
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
          sc.wait_ratio = 1.0;  // waits often, to exercise the rule
          ScenarioResult r = run_scenario(h, sc);
          ASSERT_TRUE(r.sim.complete) << hint << " " << var << " seed " << seed << ":\n" << r.sim.stuck;
          for (int d = 0; d < h.devices(); ++d) EXPECT_LE(r.sim.peak_inflight[d], r.sim.inflight_cap[d]);
          waits += r.sim.waits;
        }
  EXPECT_GT(waits, 100);  // the rule was exercised, not bypassed
}

TEST(BoundedWait, RejectsABadRatio) {
  Hint h = gen_1f1b({2, 2, 0, 0, 0});
  EXPECT_THROW(Arbiter(h, ArbiterOptions{Mode::BoundedWait, 0, {}, {}, -1}), SpecError);
  EXPECT_EQ(parse_mode("rrfp-wait"), Mode::BoundedWait);
  EXPECT_STREQ(mode_policy_name(Mode::BoundedWait), "rrfp-wait");
}
