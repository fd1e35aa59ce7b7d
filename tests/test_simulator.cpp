#include <gtest/gtest.h>

#include <random>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {
SimOptions unit_opts(const Hint& h, Mode m) {
  SimOptions o;
  o.mode = m;
  o.duration = [&h](int id) { return unit_cost(h.graph->task(id).kind); };
  return o;
}
}  // namespace

TEST(Simulator, StrictUnitCostEqualsReplay) {
  for (const char* name : {"gpipe", "1f1b"})
    for (int S : {1, 2, 4, 5})
      for (int M : {1, 3, 8}) {
        Hint h = make_hint(name, {S, M, 0, -1, 0});
        SimResult r = simulate(h, unit_opts(h, Mode::Strict));
        ASSERT_TRUE(r.complete);
        EXPECT_DOUBLE_EQ(r.makespan, replay_unit(h).makespan) << name << " S=" << S << " M=" << M;
        EXPECT_DOUBLE_EQ(r.makespan, 3.0 * (M + S - 1));
        EXPECT_EQ(r.executed, h.order);
        // 1F1B/GPipe bubble (p-1)/(m+p-1).
        EXPECT_NEAR(r.bubble_ratio, double(S - 1) / (M + S - 1), 1e-12);
      }
}

TEST(Simulator, OneF1BHasLowerActivationPeakThanGPipe) {
  Hint g = make_hint("gpipe", {4, 8, 0, -1, 0});
  Hint f = make_hint("1f1b", {4, 8, 0, -1, 0});
  SimResult rg = simulate(g, unit_opts(g, Mode::Strict));
  SimResult rf = simulate(f, unit_opts(f, Mode::Strict));
  EXPECT_DOUBLE_EQ(rg.makespan, rf.makespan);
  EXPECT_DOUBLE_EQ(rg.peak_activation_bytes[0], 8);
  EXPECT_DOUBLE_EQ(rf.peak_activation_bytes[0], 4);
}

// Explicit in-flight caps (perf/oracle_gap runs a re-ranked order under the
// hint's caps): the hint's own peaks decide as the default caps do; GPipe
// capped at 1F1B's peaks holds no more than they allow.
TEST(Simulator, ExplicitInflightCapsBindTheArbiter) {
  Hint g = make_hint("gpipe", {4, 8, 0, -1, 0});
  SimOptions o = unit_opts(g, Mode::ReadinessFirst);
  const SimResult by_default = simulate(g, o);
  o.inflight_cap = g.peak_inflight();
  const SimResult same = simulate(g, o);
  EXPECT_EQ(same.executed, by_default.executed);
  o.inflight_cap = make_hint("1f1b", {4, 8, 0, -1, 0}).peak_inflight();  // 4, 3, 2, 1
  const SimResult capped = simulate(g, o);
  ASSERT_TRUE(capped.complete) << capped.stuck;
  EXPECT_EQ(capped.inflight_cap, o.inflight_cap);
  for (int d = 0; d < 4; ++d) EXPECT_LE(capped.peak_inflight[d], o.inflight_cap[d]) << "device " << d;
  EXPECT_EQ(by_default.peak_inflight[0], 8);
}

// Readiness-first under random durations: every registered hint completes,
// respects every edge, and never exceeds the in-flight cap.
TEST(Simulator, ReadinessFirstRandomDurationsAllHints) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(0.0, 0.8);
  for (const HintInfo& info : hint_registry()) {
    for (int S : {2, 4})
      for (int M : {4, 8}) {
        HintParams p{S, M, 0, -1, 0};
        Hint h;
        try {
          h = info.make(p);
        } catch (const SpecError&) {
          continue;  // e.g. a hint needing other parameters
        }
        std::vector<double> dur(h.graph->size());
        for (double& d : dur) d = dist(rng);
        for (int slack : {0, 2}) {
          SimOptions o;
          o.mode = Mode::ReadinessFirst;
          o.inflight_slack = slack;
          o.duration = [&](int id) { return dur[id]; };
          o.comm.latency_s = 0.1;
          SimResult r = simulate(h, o);
          ASSERT_TRUE(r.complete) << info.name << " S=" << S << " M=" << M << "\n" << r.stuck;
          for (int id = 0; id < h.graph->size(); ++id)
            for (int pr : h.graph->preds(id)) EXPECT_LE(r.end[pr], r.start[id] + 1e-12);
          for (int d = 0; d < h.devices(); ++d) EXPECT_LE(r.peak_inflight[d], r.inflight_cap[d]);
        }
      }
  }
}

TEST(Simulator, CommunicationDelaysTheCriticalPath) {
  Hint h = make_hint("1f1b", {4, 8, 0, -1, 0});
  SimOptions o = unit_opts(h, Mode::Strict);
  o.comm.latency_s = 0.5;
  SimResult r = simulate(h, o);
  ASSERT_TRUE(r.complete);
  EXPECT_GT(r.makespan, 33.0);
  o.comm.bandwidth_Bps = 0;
  EXPECT_THROW(simulate(h, o), SpecError);
}

TEST(Simulator, StrictDeadlockIsReported) {
  Hint h = make_hint("1f1b", {2, 2, 0, 0, 0});
  std::swap(h.order[1][0], h.order[1][1]);
  h.finalize();
  SimResult r = simulate(h, unit_opts(h, Mode::Strict));
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.stuck.find("device 1"), std::string::npos);
  // Readiness-first runs the same hint to completion.
  EXPECT_TRUE(simulate(h, unit_opts(h, Mode::ReadinessFirst)).complete);
}
