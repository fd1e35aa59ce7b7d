// Data parallelism (--data-parallel D, hints/replicate.hpp): D replicas of
// the pipeline with M microbatches each train exactly like one pipeline
// with D x M microbatches, since a stage's copies sum their gradients in
// microbatch order (--deterministic) before its one update.
#include <gtest/gtest.h>

#include <filesystem>

#include "hints/generators.hpp"
#include "hints/replicate.hpp"
#include "tests/train_helpers.hpp"
#include "train/mpi_train.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

// The run `o` as one pipeline with every replica's microbatches.
TrainOptions one_pipeline(TrainOptions o) {
  o.microbatches *= o.data_parallel;
  o.data_parallel = 1;
  return o;
}

TEST(TrainDataParallel, ReplicasTrainAsOnePipelineOfAllTheirMicrobatches) {
  for (const char* policy : {"rrfp-fixed", "rrfp"})
    for (const char* hint : {"1f1b", "zb-h1", "chimera"}) {
      SCOPED_TRACE(std::string(policy) + " " + hint);
      TrainOptions o = testing::small_run(4);
      o.policy = policy;
      o.hint = hint;
      o.data_parallel = 2;
      o.clip_grad = 0.5;
      o.eval_every = 2;
      o.eval_microbatches = 2;
      const TrainResult dp = train(o), one = train(one_pipeline(o));
      ASSERT_EQ(dp.steps.size(), one.steps.size());
      for (size_t i = 0; i < dp.steps.size(); ++i) {
        EXPECT_EQ(dp.steps[i].loss, one.steps[i].loss) << "step " << i + 1;
        EXPECT_EQ(dp.steps[i].grad_norm, one.steps[i].grad_norm) << "step " << i + 1;
        EXPECT_EQ(dp.steps[i].val_loss, one.steps[i].val_loss) << "step " << i + 1;
      }
      // The clip bit: without it the run goes elsewhere.
      o.clip_grad = 0;
      EXPECT_NE(testing::losses(train(o)).back(), testing::losses(dp).back());
    }
}

TEST(TrainDataParallel, EachReplicaHoldsWhatOnePipelineHolds) {
  TrainOptions o = testing::small_run(2);
  o.microbatches = 4;
  TrainOptions dp = o;
  dp.data_parallel = 3;
  const TrainResult one = train(o), three = train(dp);
  const auto& a = one.steps.back().peak_activation_per_device;
  const auto& b = three.steps.back().peak_activation_per_device;
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 6u);
  for (size_t d = 0; d < b.size(); ++d) EXPECT_EQ(b[d], a[d % 2]) << "device " << d;
}

TEST(TrainDataParallel, MultimodalAndTensorParallelReplicas) {
  TrainOptions mm = testing::small_run(3);
  mm.model = "mm-tiny";
  mm.gpt = GptConfig{};
  mm.data_parallel = 2;
  EXPECT_EQ(testing::losses(train(mm)), testing::losses(train(one_pipeline(mm))));
  // 2 replicas x 2 stages x 2 members: 8 workers in one process, against
  // one pipeline without tensor parallelism (sums in another order).
  TrainOptions tp = testing::small_run(3);
  tp.gpt = testing::small_gpt(4, 4);
  tp.data_parallel = 2;
  tp.tensor_parallel = 2;
  const auto got = testing::losses(train(tp));
  tp.tensor_parallel = 1;
  const auto want = testing::losses(train(one_pipeline(tp)));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "step " << i + 1;
}

TEST(TrainDataParallel, ResumeContinuesExactly) {
  TrainOptions o = testing::small_run(6);
  o.data_parallel = 2;
  testing::expect_resume_continues(o, std::filesystem::temp_directory_path() / "rrfp_dp_resume");
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "rrfp_dp_resume");
}

TEST(TrainDataParallel, BadCombinationsAreRefusedAndTensorParallelCopiesReduceAcrossRanks) {
  TrainOptions o = testing::small_run(2);
  o.data_parallel = 0;
  testing::expect_refused(o, "--data-parallel must be at least 1 replica, got 0");
  o.data_parallel = 2;
  o.async_mode = "amdp";
  o.split = 0;
  testing::expect_refused(o, "--async amdp places its own stages (its directions are its copies)");
  // Under mpirun TP works with copies on several ranks (since 2026-12-07):
  // each member is reduced with the same member of the other replica. 2
  // devices per rank: slot 2d + t is on rank d, so stage 0's copies
  // (devices 0 and 2) are on ranks 0 and 2 for both members.
  HintParams hp;
  hp.stages = 2;
  hp.microbatches = 2;
  const MpiTrainPlan p = mpi_train_plan(replicate(make_hint("1f1b", hp), 2), 2, 2, 0, true);
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(p.holders[p.at(0, t)], (std::vector<int>{0, 2})) << t;
    EXPECT_FALSE(p.mirror[p.at(0, t)].empty()) << t;
  }
}

}  // namespace
}  // namespace rrfp::train
