// Closed forms of the schedule zoo checked against the idealised table
// (strict replay) and the simulator, and DualPipeV against PyTorch's file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "hints/csv.hpp"
#include "hints/gen_zoo.hpp"
#include "hints/replay.hpp"
#include "sim/compare.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// Largest idle time of any device between its first start and its last end
// (the bubble left once the pipeline's ramp-up/ramp-down is excluded).
double interior_idle(const Hint& h, const ReplayResult& r) {
  double worst = 0;
  for (int d = 0; d < h.devices(); ++d) {
    double first = 1e300, last = 0;
    for (int id : h.order[d]) first = std::min(first, r.start[id]), last = std::max(last, r.end[id]);
    worst = std::max(worst, last - first - r.busy[d]);
  }
  return worst;
}
}  // namespace

TEST(Zoo, ChimeraBubbleMatchesClosedForm) {
  // Chimera's (D-2)/(2N+D-2), with forward and backward of equal cost.
  for (int D : {2, 4, 6, 8})
    for (int N : {D, 2 * D}) {
      Hint h = gen_chimera({D, N, 0, -1, 0});
      ReplayResult r = replay_strict(h, [](int) { return 1.0; });
      ASSERT_TRUE(r.complete);
      EXPECT_NEAR(r.bubble_ratio, double(D - 2) / (2 * N + D - 2), 1e-12) << "D=" << D << " N=" << N;
      // ... against 1F1B's (D-1)/(N+D-1) at the same cost.
      Hint f = make_hint("1f1b", {D, N, 0, -1, 0});
      ReplayResult rf = replay_strict(f, [](int) { return 1.0; });
      EXPECT_NEAR(rf.bubble_ratio, double(D - 1) / (N + D - 1), 1e-12);
    }
}

TEST(Zoo, ChimeraHoldsTwoWeightCopies) {
  Hint h = gen_chimera({4, 8, 0, -1, 0});
  SimOptions o;
  o.duration = [](int) { return 1.0; };
  SimResult r = simulate(h, o);
  ASSERT_TRUE(r.complete);
  for (double w : r.weight_bytes) EXPECT_DOUBLE_EQ(w, 2.0);
  Hint g = make_hint("1f1b", {4, 8, 0, -1, 0});
  for (double w : simulate(g, o).weight_bytes) EXPECT_DOUBLE_EQ(w, 1.0);
}

TEST(Zoo, DualPipeVMatchesDeepSeekTable) {
  // Bubble (PP/2-1)(F&B+B-3W) with PP = 2D stages, F=B=W=1 and F&B = 3 back
  // to back: D-1 per device; activations PP+1 chunk-microbatches.
  for (int D : {2, 4, 6, 8})
    for (int M : {2 * D, 2 * D + 2, 3 * D}) {
      Hint h = gen_dualpipev({D, M, 0, -1, 0});
      ReplayResult r = replay_unit(h);
      ASSERT_TRUE(r.complete);
      for (int d = 0; d < D; ++d) {
        EXPECT_DOUBLE_EQ(r.busy[d], 6.0 * M);
        EXPECT_LE(r.makespan - r.busy[d], D - 1 + 1e-12);
      }
      EXPECT_DOUBLE_EQ(r.makespan - 6.0 * M, D - 1);
      for (int p : h.peak_inflight()) EXPECT_LE(p, 2 * D + 1);
      EXPECT_EQ(h.peak_inflight()[0], 2 * D + 1);
    }
}

TEST(Zoo, DualPipeVEqualsPyTorchReferenceFile) {
  Hint h = gen_dualpipev({4, 10, 0, -1, 0});
  std::string ref = slurp(std::string(RRFP_REFERENCE_DIR) + "/dualpipev_4rank_10mb.csv");
  EXPECT_EQ(export_csv(h), ref);
}

TEST(Zoo, HanayoAndChimeraRejectBadParameters) {
  EXPECT_THROW(gen_chimera({3, 4, 0, -1, 0}), SpecError);
  EXPECT_THROW(gen_chimera({4, 5, 0, -1, 0}), SpecError);
  EXPECT_THROW(gen_dualpipev({4, 7, 0, -1, 0}), SpecError);
  EXPECT_THROW(gen_hanayo({4, 8, 0, -1, 100}), SpecError);
}

TEST(Zoo, HanayoWavesShrinkTheBubble) {
  double prev = 1;
  for (int W : {1, 2, 3}) {
    Hint h = gen_hanayo({4, 8, 0, -1, W});
    EXPECT_EQ(h.spec().stages, 2 * W * 4);
    ReplayResult r = replay_strict(h, [&](int id) { return unit_cost(h.graph->task(id).kind) / (2.0 * W); });
    ASSERT_TRUE(r.complete);
    EXPECT_LT(r.bubble_ratio, prev);
    prev = r.bubble_ratio;
  }
}

TEST(Zoo, ZeroBubbleSchedulesHaveNoInteriorBubble) {
  // ZB-H2 (2x activations) and ZB-V (1x) leave no idle time between a
  // device's first and last pass with F=B=W; ZB-H1 and 1F1B do.
  for (int p : {4, 6}) {
    const int m = 3 * p;
    Hint one = make_hint("1f1b", {p, m, 0, 1, 0});
    Hint h1 = make_hint("zb-h1", {p, m, 0, -1, 0});
    Hint h2 = make_hint("zb-h2", {p, m, 0, -1, 0});
    Hint v = make_hint("zbv", {p, m, 0, -1, 0});
    EXPECT_GT(interior_idle(h1, replay_unit(h1)), 0);
    EXPECT_DOUBLE_EQ(interior_idle(h2, replay_unit(h2)), 0) << "zb-h2 p=" << p;
    EXPECT_DOUBLE_EQ(interior_idle(v, replay_unit(v)), 0) << "zbv p=" << p;
    // Memory: in (stage, microbatch) activations of one device's full share.
    EXPECT_EQ(one.peak_inflight()[0], p);
    EXPECT_LE(h2.peak_inflight()[0], 2 * p);
    EXPECT_LE(v.peak_inflight()[0] / 2.0, p);  // two half-size chunks
  }
}

// Under communication the ranking by simulation differs from the ranking by
// bubble formula (the example in docs/simulator.md).
TEST(Zoo, CommunicationChangesTheRanking) {
  Scenario sc;
  sc.cost.unit_ms = 1;
  sc.comm.latency_s = 1e-3;
  auto rows = compare_hints({"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zbv"}, {4, 8, 0, -1, 0}, sc, 1e6, 1e6);
  bool differs = false;
  for (const CompareRow& r : rows) differs = differs || r.rank_formula != r.rank_sim;
  EXPECT_TRUE(differs);
  // ZB-V has the best formula but pays for its extra cross-device hops.
  for (const CompareRow& r : rows)
    if (r.hint == "zbv") {
      EXPECT_EQ(r.rank_formula, 1);
      EXPECT_GT(r.rank_sim, 1);
    }
}

TEST(Zoo, ChimeraPaysForTheReplicaAllReduce) {
  Hint h = gen_chimera({4, 8, 0, -1, 0});
  SimOptions o;
  o.mode = Mode::Strict;
  o.duration = [](int) { return 1.0; };
  double base = simulate(h, o).makespan;
  o.comm.latency_s = 0.5;
  o.comm.bandwidth_Bps = 2.0;
  o.memory.weight_bytes.assign(4, 4.0);  // 2 time units on the wire
  SimResult r = simulate(h, o);
  ASSERT_TRUE(r.complete);
  // Transfers between stages delay the run too, so only a lower bound:
  // the last stage copy still needs latency + bytes/bandwidth after its passes.
  EXPECT_GE(r.makespan, base + 2.5);
  double last_pass = 0;
  for (double e : r.end) last_pass = std::max(last_pass, e);
  EXPECT_DOUBLE_EQ(r.makespan, last_pass + 2.5);
}
