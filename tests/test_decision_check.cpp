// sim/decision_check.hpp on simulated runs (no StarPU): a run the simulator
// made is replayed exactly under its own mode and differs under another;
// malformed records are refused by name.
#include <gtest/gtest.h>

#include <random>

#include "hints/generators.hpp"
#include "sim/decision_check.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {

struct SimRun {
  Hint h;
  SimResult r;
  ArbiterTimes t;
};

// A readiness-first run with random durations, and what its arbiter saw:
// a task is ready when its last input ends, its device asks when the task
// before ends, and takes it when it starts.
SimRun simulated(const std::string& hint, HintParams p, Mode mode, unsigned seed) {
  SimRun run{make_hint(hint, p), {}, {}};
  const TaskGraph& g = *run.h.graph;
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> ln(0, 0.6);
  std::vector<double> dur(g.size());
  for (double& d : dur) d = 1e-3 * ln(rng);
  SimOptions o;
  o.mode = mode;
  o.duration = [&](int id) { return dur[id]; };
  run.r = simulate(run.h, o);
  const int n = g.size();
  run.t.ready.assign(n, 0);
  run.t.ask.assign(n, 0);
  run.t.take = run.r.start;
  run.t.finish = run.r.end;
  for (int id = 0; id < n; ++id)
    for (int q : g.preds(id)) run.t.ready[id] = std::max(run.t.ready[id], run.r.end[q]);
  for (const auto& order : run.r.executed)
    for (size_t k = 1; k < order.size(); ++k) run.t.ask[order[k]] = run.r.end[order[k - 1]];
  return run;
}

}  // namespace

TEST(DecisionCheck, ReplaysASimulatedRunExactly) {
  for (const char* hint : {"1f1b", "zb-h1", "interleaved-1f1b"})
    for (unsigned seed = 1; seed <= 5; ++seed) {
      SimRun run = simulated(hint, {4, 8, std::string(hint) == "interleaved-1f1b" ? 2 : 0, -1, 0}, Mode::ReadinessFirst, seed);
      ASSERT_TRUE(run.r.complete);
      DecisionCheckOptions o;
      o.draws = 4;
      DecisionCheck c = check_decisions(run.h, run.t, run.r.executed, o);
      EXPECT_TRUE(c.exact) << hint << " seed " << seed << ": " << c.describe(*run.h.graph);
      EXPECT_TRUE(c.pinned) << hint << " seed " << seed;
      EXPECT_EQ(c.late_workers, 0);
      EXPECT_EQ(c.draws_matching, 4) << "a run without ties agrees under small perturbations";
      EXPECT_EQ(c.decisions, run.h.graph->size());
    }
}

TEST(DecisionCheck, AnotherModeDisagrees) {
  int reordered = 0;
  for (unsigned seed = 1; seed <= 5; ++seed) {
    SimRun run = simulated("zb-h1", {4, 8, 0, -1, 0}, Mode::ReadinessFirst, seed);
    if (run.r.executed == run.h.order) continue;  // readiness-first kept the hint's order: nothing to tell
    ++reordered;
    DecisionCheckOptions o;
    o.mode = Mode::Strict;
    o.draws = 4;
    DecisionCheck c = check_decisions(run.h, run.t, run.r.executed, o);
    EXPECT_FALSE(c.agrees()) << c.describe(*run.h.graph);
    EXPECT_FALSE(c.pinned);
    EXPECT_GE(c.device, 0);
    EXPECT_NE(c.recorded, c.simulated);
  }
  EXPECT_GT(reordered, 0);
}

TEST(DecisionCheck, StrictRunsReplayUnderStrict) {
  SimRun run = simulated("1f1b", {3, 6, 0, 0, 0}, Mode::Strict, 7);
  DecisionCheckOptions o;
  o.mode = Mode::Strict;
  DecisionCheck c = check_decisions(run.h, run.t, run.r.executed, o);
  EXPECT_TRUE(c.exact && c.pinned) << c.describe(*run.h.graph);
}

TEST(DecisionCheck, MalformedRecordsAreRefused) {
  SimRun run = simulated("1f1b", {2, 4, 0, 0, 0}, Mode::ReadinessFirst, 3);
  DecisionCheckOptions o;
  ArbiterTimes short_times = run.t;
  short_times.finish.pop_back();
  EXPECT_THROW(check_decisions(run.h, short_times, run.r.executed, o), SpecError);
  auto missing = run.r.executed;
  missing[0].pop_back();
  EXPECT_THROW(check_decisions(run.h, run.t, missing, o), SpecError);
  ArbiterTimes backwards = run.t;
  backwards.take[0] = backwards.finish[0] + 1;  // taken after it finished
  EXPECT_THROW(check_decisions(run.h, backwards, run.r.executed, o), SpecError);
  auto wrong_id = run.r.executed;
  wrong_id[1][0] = 9999;
  EXPECT_THROW(check_decisions(run.h, run.t, wrong_id, o), SpecError);
}

// Shuffling the order in which devices are asked at one instant is seeded:
// the same seed gives the same run.
TEST(DecisionCheck, TieShuffleIsDeterministic) {
  Hint h = make_hint("1f1b", {4, 8, 0, 0, 0});
  SimOptions o;
  o.duration = [](int) { return 1.0; };  // every event a tie
  o.tie_shuffle_seed = 42;
  SimResult a = simulate(h, o), b = simulate(h, o);
  ASSERT_TRUE(a.complete);
  EXPECT_EQ(a.executed, b.executed);
  EXPECT_EQ(a.start, b.start);
}
