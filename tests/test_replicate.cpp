// Data-parallel replicas of a hint (hints/replicate.hpp): each replica is
// the base hint on its own devices and microbatches, and runs like it.
#include <gtest/gtest.h>

#include <set>

#include "hints/csv.hpp"
#include "hints/gen_zoo.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "hints/replicate.hpp"
#include "hints/validate.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {

double unit(const Hint& h, int id) { return h.graph->task(id).kind == Kind::BW ? 2.0 : 1.0; }

// Replica r's device r*D + d runs the base's device d order, microbatch m
// of the base being r*M + m, and every replica keeps the base's stages.
void expect_replicas_of(const Hint& base, const Hint& h, int R) {
  const int D = base.devices(), M = base.spec().microbatches;
  ASSERT_EQ(h.devices(), R * D);
  ASSERT_EQ(h.spec().microbatches, R * M);
  ASSERT_EQ(h.spec().stages, base.spec().stages);
  ASSERT_EQ(h.spec().pipelines(), R * base.spec().pipelines());
  for (int r = 0; r < R; ++r)
    for (int d = 0; d < D; ++d) {
      const auto& row = h.order[r * D + d];
      ASSERT_EQ(row.size(), base.order[d].size());
      for (size_t i = 0; i < row.size(); ++i) {
        const Task& want = base.graph->task(base.order[d][i]);
        const Task& got = h.graph->task(row[i]);
        EXPECT_EQ(got.kind, want.kind);
        EXPECT_EQ(got.stage, want.stage);
        EXPECT_EQ(got.mb, r * M + want.mb);
        EXPECT_EQ(got.device, r * D + want.device);
      }
    }
}

}  // namespace

TEST(Replicate, EachReplicaRunsTheBaseOrderOnItsOwnDevicesAndMicrobatches) {
  for (const char* name : {"1f1b", "zb-h1", "gpipe", "interleaved-1f1b", "zbv", "chimera", "dualpipev"})
    for (int R : {2, 3}) {
      SCOPED_TRACE(testing::Message() << name << " x" << R);
      const std::string n = name;
      const Hint base = make_hint(n, {4, 8, n == "interleaved-1f1b" ? 2 : 0, -1, 0});
      const Hint h = replicate(base, R);
      expect_replicas_of(base, h, R);
      EXPECT_EQ(h.name, std::string(base.name) + "-dp" + std::to_string(R));
      // No replica shares a device with another.
      for (int p = 0; p < h.spec().pipelines(); ++p)
        for (int s = 0; s < h.spec().stages; ++s)
          EXPECT_EQ(h.spec().placement[p][s] / base.devices(), p / base.spec().pipelines());
      // Mixed backward forms (DualPipeV) follow their microbatch.
      for (int s = 0; s < h.spec().stages; ++s)
        for (int m = 0; m < h.spec().microbatches; ++m)
          EXPECT_EQ(h.spec().is_split(s, m), base.spec().is_split(s, m % base.spec().microbatches));
      // Strictly executable, and in unit time each replica's devices take
      // exactly the base's times: the replicas never wait for each other.
      const ValidationReport v = validate_hint(h);
      ASSERT_TRUE(v.replay.complete);
      const ReplayResult rb = replay_strict(base, [&](int id) { return unit(base, id); });
      const ReplayResult rh = replay_strict(h, [&](int id) { return unit(h, id); });
      EXPECT_DOUBLE_EQ(rh.makespan, rb.makespan);
      for (int d = 0; d < h.devices(); ++d) EXPECT_DOUBLE_EQ(rh.busy[d], rb.busy[d % base.devices()]);
    }
}

TEST(Replicate, OneReplicaIsTheBaseAndBadCountsAreRefused) {
  const Hint base = make_hint("1f1b", {2, 4, 0, -1, 0});
  const Hint one = replicate(base, 1);
  EXPECT_EQ(one.name, base.name);
  EXPECT_EQ(one.order, base.order);
  try {
    replicate(base, 0);
    FAIL() << "0 replicas accepted";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "--data-parallel must be at least 1 replica, got 0");
  }
  EXPECT_THROW(replicate(base, kMaxStages), SpecError);  // 2 x 4096 devices
}

TEST(Replicate, SimulatorChargesTheReplicasGradientReduction) {
  // Weights and a finite link: the copies of each stage reduce their
  // gradients after the step, which one replica alone does not pay.
  const Hint base = make_hint("1f1b", {2, 4, 0, -1, 0});
  const Hint h = replicate(base, 2);
  auto run = [](const Hint& x, double bandwidth) {
    SimOptions o;
    o.duration = [&x](int id) { return unit(x, id) * 1e-3; };
    o.memory.weight_bytes = {1e8, 1e8};
    o.comm.bandwidth_Bps = bandwidth;
    const SimResult r = simulate(x, o);
    EXPECT_TRUE(r.complete) << r.stuck;
    return r.makespan;
  };
  EXPECT_DOUBLE_EQ(run(h, 1e30), run(base, 1e30));
  // 100 MB at 1 GB/s: two copies swap them (0.1 s); four run a ring
  // all-reduce, 2 x 3/4 of the bytes (0.15 s).
  EXPECT_NEAR(run(h, 1e9) - run(base, 1e9), 0.1, 1e-9);
  EXPECT_NEAR(run(replicate(base, 4), 1e9) - run(base, 1e9), 0.15, 1e-9);
}

TEST(Replicate, AfterTheGraphCopiesReduceOnceEveryPassEndedOneStageAfterAnother) {
  // rrfp train --mirror-reduce after-graph: no exchange starts before the
  // graph's last pass; a device's exchanges run one after another.
  auto run = [](const Hint& x, double bandwidth, bool after_graph) {
    SimOptions o;
    o.duration = [&x](int id) { return unit(x, id) * 1e-3; };
    o.memory.weight_bytes.assign(x.spec().stages, 1e8);
    o.comm.bandwidth_Bps = bandwidth;
    o.comm.mirror_after_graph = after_graph;
    const SimResult r = simulate(x, o);
    EXPECT_TRUE(r.complete) << r.stuck;
    return r.makespan;
  };
  // Chimera on 4 devices: stage s's copies are on devices s and 3 - s, so
  // stages 3 and 2 reduce side by side (0.1 s each), then 1 and 0 on the
  // same pairs of devices.
  const Hint chimera = make_hint("chimera", {4, 8, 0, -1, 0});
  const double graph = run(chimera, 1e30, false);
  EXPECT_DOUBLE_EQ(run(chimera, 1e30, true), graph);
  EXPECT_NEAR(run(chimera, 1e9, true), graph + 0.2, 1e-9);
  const double beside = run(chimera, 1e9, false);  // each stage from its own last pass
  EXPECT_LT(beside, graph + 0.2 - 1e-3);
  EXPECT_GE(beside, graph + 0.1 - 1e-9);
  // Two replicas of 2 stages: the copies' pairs share no device, both
  // reduce at once after the graph.
  const Hint dp = replicate(make_hint("1f1b", {2, 4, 0, -1, 0}), 2);
  EXPECT_NEAR(run(dp, 1e9, true), run(dp, 1e30, true) + 0.1, 1e-9);
}
