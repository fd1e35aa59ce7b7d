// The Arbiter as each rank of a multi-rank run uses it: it hears only about
// its own devices' tasks (local-device mask), counts only those, and does
// not call a wait for another rank's message a stall.
#include <gtest/gtest.h>

#include "hints/generators.hpp"
#include "sched/arbiter.hpp"

using namespace rrfp;

namespace {

// Two "ranks", each with an arbiter over its half of the devices; a step
// loop stands in for the messages between them.
std::vector<std::vector<int>> drive_split(const Hint& h, Mode mode, int K, std::vector<int>* remaining) {
  const TaskGraph& g = *h.graph;
  const int D = h.devices(), R = D / K;
  std::vector<std::unique_ptr<Arbiter>> arb;
  for (int r = 0; r < R; ++r) {
    std::vector<unsigned char> local(D, 0);
    for (int d = r * K; d < (r + 1) * K; ++d) local[d] = 1;
    arb.push_back(std::make_unique<Arbiter>(h, ArbiterOptions{mode, 0, {}, local}));
  }
  auto owner = [&](int id) -> Arbiter& { return *arb[g.task(id).device / K]; };
  std::vector<int> missing(g.size());
  for (int id = 0; id < g.size(); ++id)
    if ((missing[id] = g.preds(id).size()) == 0) owner(id).on_ready(id);
  std::vector<std::vector<int>> ran(D);
  for (int round = 0; round < 100000; ++round) {
    std::vector<int> now;
    for (int d = 0; d < D; ++d) {
      int t = arb[d / K]->take(d);
      if (t >= 0) now.push_back(t), ran[d].push_back(t);
    }
    if (now.empty()) break;
    for (int t : now) {
      owner(t).on_finish(t);
      for (int s : g.succs(t))
        if (--missing[s] == 0) owner(s).on_ready(s);
    }
  }
  for (auto& a : arb) remaining->push_back(a->remaining());
  return ran;
}

}  // namespace

TEST(ArbiterLocal, CountsOnlyLocalTasks) {
  Hint h = gen_1f1b({4, 8, 0, 1, 0});
  std::vector<unsigned char> local = {0, 1, 0, 0};
  Arbiter a(h, ArbiterOptions{Mode::ReadinessFirst, 0, {}, local});
  EXPECT_EQ(a.remaining(), h.graph->tasks_per_device()[1]);
  EXPECT_TRUE(a.is_local(1));
  EXPECT_FALSE(a.is_local(0));
  EXPECT_EQ(a.describe().find("device 0"), std::string::npos);
  EXPECT_NE(a.describe().find("device 1"), std::string::npos);
}

TEST(ArbiterLocal, MaskMustCoverEveryDevice) {
  Hint h = gen_1f1b({4, 8, 0, 1, 0});
  EXPECT_THROW(Arbiter(h, ArbiterOptions{Mode::Strict, 0, {}, {1, 0}}), SpecError);
}

TEST(ArbiterLocal, SplitRunsMatchOneArbiter) {
  for (Mode mode : {Mode::Strict, Mode::ReadinessFirst})
    for (int K : {1, 2}) {
      Hint h = gen_1f1b({4, 8, 0, 1, 0});
      std::vector<int> remaining;
      auto ran = drive_split(h, mode, K, &remaining);
      for (int r : remaining) EXPECT_EQ(r, 0);
      if (mode == Mode::Strict) {
        EXPECT_EQ(ran, h.order);
      }
      for (int d = 0; d < 4; ++d) EXPECT_EQ(ran[d].size(), h.order[d].size());
    }
}

TEST(ArbiterLocal, WaitingForAnotherRankIsNotAStall) {
  // Device 1 (this rank) needs F0 of device 0 (another rank) first: nothing
  // is ready here, but nothing local is stuck either.
  Hint h = gen_1f1b({2, 2, 0, 0, 0});
  Arbiter a(h, ArbiterOptions{Mode::Strict, 0, {}, {0, 1}});
  EXPECT_EQ(a.take(1), -1);
  // Strict and ReadinessFirst say "stalled" only from local facts; the
  // executor asks only when no message is still expected.
  EXPECT_TRUE(a.stalled());
  EXPECT_EQ(a.describe().find("device 0"), std::string::npos);
}
