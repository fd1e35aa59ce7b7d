#include <gtest/gtest.h>

#include "hints/generators.hpp"
#include "sched/arbiter.hpp"

using namespace rrfp;

namespace {
// Drives the arbiter with a simple step loop: all running tasks finish at
// the end of each round. Returns the per-device execution order.
std::vector<std::vector<int>> drive(const Hint& h, Arbiter& a, int max_rounds = 100000) {
  const TaskGraph& g = *h.graph;
  std::vector<int> missing(g.size());
  for (int id = 0; id < g.size(); ++id) {
    missing[id] = g.preds(id).size();
    if (missing[id] == 0) a.on_ready(id);
  }
  std::vector<std::vector<int>> ran(h.devices());
  for (int round = 0; round < max_rounds && a.remaining() > 0; ++round) {
    std::vector<int> now;
    for (int d = 0; d < h.devices(); ++d) {
      int t = a.take(d);
      if (t >= 0) { now.push_back(t); ran[d].push_back(t); }
    }
    if (now.empty()) break;
    for (int t : now) {
      a.on_finish(t);
      for (int s : g.succs(t))
        if (--missing[s] == 0) a.on_ready(s);
    }
  }
  return ran;
}
}  // namespace

TEST(Arbiter, StrictFollowsTheHint) {
  Hint h = gen_1f1b({4, 8, 0, -1, 0});
  Arbiter a(h, {Mode::Strict, 0, {}});
  auto ran = drive(h, a);
  EXPECT_EQ(a.remaining(), 0);
  EXPECT_EQ(ran, h.order);
}

TEST(Arbiter, ReadinessFirstCompletesWithinCap) {
  Hint h = gen_1f1b({4, 8, 0, 1, 0});
  Arbiter a(h, {Mode::ReadinessFirst, 0, {}});
  drive(h, a);
  EXPECT_EQ(a.remaining(), 0);
  auto peak = h.peak_inflight();
  for (int d = 0; d < 4; ++d) EXPECT_LE(a.peak_inflight(d), peak[d]);
}

TEST(Arbiter, StallIsDetected) {
  Hint h = gen_1f1b({2, 2, 0, 0, 0});
  // Swap device 1's order so it wants the backward before the forward.
  std::swap(h.order[1][0], h.order[1][1]);
  h.finalize();
  Arbiter a(h, {Mode::Strict, 0, {}});
  drive(h, a);
  EXPECT_GT(a.remaining(), 0);
  EXPECT_TRUE(a.stalled());
  EXPECT_NE(a.describe().find("1B0"), std::string::npos);
}
