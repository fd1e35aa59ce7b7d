// rrfp tune --data-parallel: the split of the devices into pipeline replicas
// searched beside partition, placement and schedule, on synthetic profiles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hints/replicate.hpp"
#include "sim/plan.hpp"
#include "sim/tuner.hpp"
#include "synthetic_profile.hpp"

namespace rrfp {
namespace {

// `blocks` equal blocks of 1 ms forward between a light embedding and
// head; `weight` bytes of weights per block (what the replicas all-reduce).
ModelProfile uniform_blocks(int blocks, double weight) {
  return synthetic(std::vector<double>(blocks, 1.0), 1e5, weight);
}

TuneOptions four_devices(std::vector<int> degrees) {
  TuneOptions o;
  o.devices = 4;
  o.microbatches = 4;
  o.data_parallel = std::move(degrees);
  return o;
}

double replicated_step(const Plan& p) {
  const StepEstimate e = estimate_step(replicate(plan_hint(p), p.data_parallel), p.costs, plan_objective(p));
  EXPECT_TRUE(e.complete) << e.stuck;
  return e.step_s;
}

TEST(TuneDataParallel, DegreesDivideDevicesAndMicrobatches) {
  EXPECT_EQ(data_parallel_degrees(4, 8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(data_parallel_degrees(4, 6), (std::vector<int>{1, 2}));
  EXPECT_EQ(data_parallel_degrees(3, 4), (std::vector<int>{1}));
}

// Each degree's plan is one replica's pipeline on devices/D for M/D
// microbatches; its prediction is the D replicas simulated together, and
// the search over all degrees returns the shortest of them.
TEST(TuneDataParallel, KeepsTheShortestDegreeAndPredictsItsReplicas) {
  const ModelProfile prof = uniform_blocks(8, 1e5);
  double shortest = 1e300;
  int shortest_degree = 0;
  for (int D : {1, 2, 4}) {
    const Plan p = tune(prof, four_devices({D}));
    EXPECT_EQ(p.data_parallel, D);
    EXPECT_EQ(p.devices, 4 / D);
    EXPECT_EQ(p.microbatches, 4 / D);
    EXPECT_NEAR(p.predicted_step_s, replicated_step(p), 1e-12) << D;
    if (p.predicted_step_s < shortest) shortest = p.predicted_step_s, shortest_degree = D;
  }
  const Plan best = tune(prof, four_devices({1, 2, 4}));
  EXPECT_EQ(best.data_parallel, shortest_degree);
  EXPECT_DOUBLE_EQ(best.predicted_step_s, shortest);
  // 4 microbatches on a 4-stage pipeline leave a bubble that replicas do
  // not have: on an infinite link a split wins.
  EXPECT_GT(best.data_parallel, 1);
}

// The replicas' all-reduce goes over the link: on a slow one, with heavy
// weights, one pipeline over all devices wins.
TEST(TuneDataParallel, ASlowLinkKeepsOnePipeline) {
  TuneOptions o = four_devices({1, 2, 4});
  o.objective.bandwidth_Bps = 1e8;  // 0.8 Gbit/s: 80 ms per block's 8 MB
  const ModelProfile heavy = uniform_blocks(8, 8e6);
  const Plan p = tune(heavy, o);
  EXPECT_EQ(p.data_parallel, 1);
  EXPECT_EQ(p.devices, 4);
  // The same 2 replicas predicted on that link and on an infinite one: the
  // slow link's step carries the all-reduce.
  TuneOptions two = four_devices({2});
  const double infinite = tune(heavy, two).predicted_step_s;
  two.objective.bandwidth_Bps = 1e8;
  EXPECT_GT(tune(heavy, two).predicted_step_s, infinite + 0.08);
}

// Options no degree could take are named as such, not as degrees that
// do not fit.
TEST(TuneDataParallel, BadOptionsAreNamedBeforeAnyDegree) {
  TuneOptions o = four_devices({1, 2});
  o.schedules = {"1f1c"};
  try {
    (void)tune(uniform_blocks(8, 1e5), o);
    ADD_FAILURE() << "an unknown schedule accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--schedules: unknown schedule '1f1c'", 0), 0u) << e.what();
  }
}

TEST(TuneDataParallel, RefusesDegreesThatDoNotSplitAndNamesWhyNoneFits) {
  const ModelProfile prof = uniform_blocks(8, 1e5);
  try {
    (void)tune(prof, four_devices({3}));
    ADD_FAILURE() << "3 replicas of 4 devices accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("--data-parallel 3 must divide --devices 4 and --microbatches 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)tune(prof, four_devices({0})), SpecError);
  TuneOptions tiny = four_devices({1, 2});
  tiny.memory_bytes = 1e3;
  try {
    (void)tune(prof, tiny);
    ADD_FAILURE() << "1 kB per device accepted";
  } catch (const SpecError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("no data-parallel degree fits: data parallel 1: "), std::string::npos) << m;
    EXPECT_NE(m.find("; data parallel 2: "), std::string::npos) << m;
  }
}

// A plan keeps its degree through its file; runs adopt it unless they ask
// for another.
TEST(TuneDataParallel, PlanFilesKeepTheDegreeAndRunsAdoptIt) {
  const Plan p = tune(uniform_blocks(8, 1e5), four_devices({2}));
  const Plan back = parse_plan(plan_json(p), "dp.json");
  EXPECT_EQ(back.data_parallel, 2);
  EXPECT_EQ(plan_replicas(back, 1), 2);
  EXPECT_EQ(plan_replicas(back, 2), 2);
  try {
    (void)plan_replicas(back, 3);
    ADD_FAILURE() << "3 replicas of a 2-replica plan accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("plan 'dp.json' was tuned for 2 data-parallel replicas; --data-parallel 3"),
              std::string::npos)
        << e.what();
  }
  Plan one = back;
  one.data_parallel = 1;
  EXPECT_EQ(plan_replicas(one, 3), 3);  // a one-pipeline plan runs on as many replicas as asked
  nlohmann::json bad = plan_json(p);
  bad["data_parallel"] = 0;
  EXPECT_THROW((void)parse_plan(bad, "bad.json"), SpecError);
  bad.erase("data_parallel");  // plans written before the field: one pipeline
  EXPECT_EQ(parse_plan(bad, "old.json").data_parallel, 1);
}

// On one device every schedule runs the same passes back to back, so they
// tie in simulation; the plan must then be one that holds the fewest
// activations (GPipe's all-forwards-first was 1.11-1.16x slower when
// really trained, perf/RESULTS.md), not the first one tried.
TEST(TuneDataParallel, ATieGoesToTheScheduleThatHoldsLess) {
  const ModelProfile prof = uniform_blocks(8, 1e5);
  TuneOptions o = four_devices({4});
  o.microbatches = 16;  // 4 replicas of one device, 4 microbatches each
  const Plan best = tune(prof, o);
  ASSERT_EQ(best.devices, 1);
  o.schedules = {"gpipe"};
  const Plan gpipe = tune(prof, o);
  EXPECT_NEAR(best.predicted_step_s, gpipe.predicted_step_s, 1e-6 * gpipe.predicted_step_s);
  EXPECT_LT(best.memory_bytes[0], gpipe.memory_bytes[0]) << best.schedule;
  EXPECT_NE(best.schedule, "gpipe");
}

// `rrfp tune --mirror-reduce after-graph`: the copies' exchanges wait for
// the whole graph and run one after another on a device, as rrfp train's
// blocking ones under mpirun; the plan keeps the mode, and its objective
// predicts the same step again.
TEST(TuneDataParallel, AfterTheGraphReductionIsPredictedAndKept) {
  const ModelProfile heavy = uniform_blocks(8, 8e6);
  TuneOptions o = four_devices({1});
  o.placements = {"bidirectional"};  // Chimera: every stage has two copies
  o.objective.bandwidth_Bps = 1e8;
  const Plan beside = tune(heavy, o);
  o.objective.mirror_after_graph = true;
  const Plan after = tune(heavy, o);
  EXPECT_FALSE(beside.mirror_after_graph);
  EXPECT_TRUE(after.mirror_after_graph);
  EXPECT_GT(after.predicted_step_s, beside.predicted_step_s * 1.05);
  const Plan back = parse_plan(plan_json(after), "after.json");
  EXPECT_TRUE(back.mirror_after_graph);
  const StepEstimate again = estimate_step(plan_hint(back), back.costs, plan_objective(back));
  EXPECT_NEAR(again.step_s, after.predicted_step_s, 1e-12);
  nlohmann::json old = plan_json(beside);
  old.erase("mirror_reduce");  // plans written before it
  EXPECT_FALSE(parse_plan(old, "old.json").mirror_after_graph);
  old["mirror_reduce"] = "sometimes";
  EXPECT_THROW((void)parse_plan(old, "bad.json"), SpecError);
}

}  // namespace
}  // namespace rrfp
