// rrfp-wait (Mode::BoundedWait): the rule's decisions, step by step on the
// arbiter, and its completion under random durations in the simulator.
#include <gtest/gtest.h>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "sched/arbiter.hpp"
#include "sim/scenario.hpp"

using namespace rrfp;

namespace {

// 1F1B, 3 devices, 6 microbatches, in-flight slack 2 (caps 5, 4, 3). Orders
// (B = fused backward):
//   device 0: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5
//   device 1: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5
//   device 2: F0 B0 F1 B1 ...
// Every call below is one the simulator or the StarPU policy would make, with
// the clock passed explicitly; F takes 1 unit, B 2.
struct Walk {
  Hint h = gen_1f1b({3, 6, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  int F(int s, int m) const { return g.find(Kind::F, s, m); }
  int B(int s, int m) const { return g.find(Kind::BW, s, m); }
  Arbiter a;
  explicit Walk(double ratio) : a(h, ArbiterOptions{Mode::BoundedWait, 2, {}, {}, ratio}) {
    for (int m = 0; m < 6; ++m) a.on_ready(F(0, m), 0);
  }
  void finish(int task, double t, std::initializer_list<int> now_ready) {
    a.on_finish(task, t);
    for (int r : now_ready) a.on_ready(r, t);
  }
  // t = 0..3: the forwards fill the pipeline.
  void warm_up() {
    ASSERT_EQ(a.take(0, 0), F(0, 0));
    finish(F(0, 0), 1, {F(1, 0)});
    ASSERT_EQ(a.take(0, 1), F(0, 1));
    ASSERT_EQ(a.take(1, 1), F(1, 0));
    finish(F(0, 1), 2, {F(1, 1)});
    finish(F(1, 0), 2, {F(2, 0)});
    ASSERT_EQ(a.take(0, 2), F(0, 2));
    ASSERT_EQ(a.take(1, 2), F(1, 1));
    ASSERT_EQ(a.take(2, 2), F(2, 0));
    finish(F(0, 2), 3, {F(1, 2)});
    finish(F(1, 1), 3, {F(2, 1)});
    finish(F(2, 0), 3, {B(2, 0)});
  }
  // t = 3..7: the first backwards; B(2,1) starts at 6 (until 8).
  void to_t7() {
    warm_up();
    ASSERT_EQ(a.take(0, 3), F(0, 3));
    ASSERT_EQ(a.take(2, 3), B(2, 0));  // runs until 5
    // B(2,0)'s duration is not known yet: no prediction, no wait.
    ASSERT_EQ(a.take(1, 3), F(1, 2));
    finish(F(0, 3), 4, {F(1, 3)});
    finish(F(1, 2), 4, {F(2, 2)});
    ASSERT_EQ(a.take(0, 4), F(0, 4));
    ASSERT_EQ(a.take(1, 4), F(1, 3));
    finish(B(2, 0), 5, {B(1, 0)});  // B of stage 2: 2 units
    finish(F(0, 4), 5, {F(1, 4)});
    finish(F(1, 3), 5, {F(2, 3)});
    ASSERT_EQ(a.take(2, 5), F(2, 1));
    ASSERT_EQ(a.take(1, 5), B(1, 0));  // runs until 7
    ASSERT_EQ(a.take(0, 5), -1);       // F5 is held by the cap
    finish(F(2, 1), 6, {B(2, 1)});
    ASSERT_EQ(a.take(2, 6), B(2, 1));  // predicted to end at 6 + 2 = 8
    finish(B(1, 0), 7, {B(0, 0)});
    ASSERT_EQ(a.take(0, 7), B(0, 0));  // until 9
  }
};

}  // namespace

TEST(BoundedWait, NeverWaitsForATaskWhoseInputsHaveNotStarted) {
  Walk w(100.0);  // a huge ratio: only "can it become ready on its own?" can stop a wait
  w.warm_up();
  // Device 1 prefers B(1,0), whose input B(2,0) has not started (device 2
  // has not asked yet), and device 0 wants B(1,0)'s output next. F(1,2) is
  // ready with an estimate (1 unit): it runs at once.
  EXPECT_EQ(w.a.take(1, 3), w.F(1, 2));
  EXPECT_EQ(w.a.wake_at(1), -1);
  EXPECT_EQ(w.a.waits(), 0);
}

TEST(BoundedWait, WaitsForAPredictedTaskThenTakesIt) {
  for (bool late : {false, true}) {  // B(2,1) on time, or past the wait budget
    SCOPED_TRACE(late);
    Walk w(2.0);
    Arbiter& a = w.a;
    w.to_t7();
    // Device 1 prefers B(1,1) (input predicted at 8, 1 unit away; device 0
    // wants its output next) over the ready F(1,4) (1 unit): 1 < 2 x 1, so
    // it waits, at most until 7 + 2.
    EXPECT_EQ(a.take(1, 7), -1);
    EXPECT_DOUBLE_EQ(a.wake_at(1), 9.0);
    EXPECT_EQ(a.waits(), 1);
    EXPECT_EQ(a.take(1, 8), -1);  // still inside the budget
    if (!late) {
      w.finish(w.B(2, 1), 8, {w.B(1, 1)});
      EXPECT_EQ(a.take(1, 8), w.B(1, 1));
    } else {
      // The budget is spent: the device gives up on B(1,1) for good.
      EXPECT_EQ(a.take(1, 9), w.F(1, 4));
      EXPECT_EQ(a.wake_at(1), -1);
      w.finish(w.B(2, 1), 10, {w.B(1, 1)});
      w.finish(w.F(1, 4), 10, {w.F(2, 4)});
      EXPECT_EQ(a.take(1, 10), w.B(1, 1));
      EXPECT_EQ(a.waits(), 1);
    }
  }
}

TEST(BoundedWait, NeverWaitsWhenNoOtherDeviceNeedsThePreferredTask) {
  Walk w(100.0);
  Arbiter& a = w.a;
  w.to_t7();
  ASSERT_EQ(a.take(1, 7), -1);  // waits for B(1,1), as above
  w.finish(w.B(2, 1), 8, {w.B(1, 1)});
  ASSERT_EQ(a.take(1, 8), w.B(1, 1));  // until 10
  w.finish(w.B(0, 0), 9, {});
  // Device 0 prefers B(0,1), predicted at 10, with F(0,5) ready (1 unit):
  // the ratio would allow a wait, but stage 0 feeds no other device, so
  // nobody is starved by running F(0,5) first.
  EXPECT_EQ(a.take(0, 9), w.F(0, 5));
  EXPECT_EQ(a.waits(), 1);
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
