// Megatron-style tensor parallelism in mm-tiny: the vision encoder's and
// the language blocks' heads and MLP columns split over T = 2 members, the
// patch embedding, pooling, projector, embeddings and head copied. The
// gathered gradients of one iteration match the plain LibTorch reference
// (T = 1), replicated parameters get bitwise one gradient on both members,
// and training follows T = 1 step by step with less activation memory per
// member on the encoder stage, and resumes from its checkpoint exactly (at
// T = 1 too, within 1e-5).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hints/generators.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
#include "tests/tp_helpers.hpp"
#include "tests/train_helpers.hpp"
#include "train/mm_model.hpp"
#include "train/pipeline.hpp"
#include "train/reference.hpp"
#include "train/tp_model.hpp"
#include "train/trainer.hpp"

#include <cmath>
#include <filesystem>

namespace rrfp::train {
namespace {

TEST(TrainTensorParallelMm, ShardsTheBlocksAndCopiesTheProjector) {
  EXPECT_EQ(shard_spec("vis.block0.qkv.w").dim, 0);
  EXPECT_TRUE(shard_spec("vis.block0.qkv.w").qkv);
  EXPECT_EQ(shard_spec("vis.block1.fc2.w").dim, 1);
  EXPECT_EQ(shard_spec("block3.proj.w").dim, 1);
  for (const char* copied : {"vis.proj.w", "vis.proj.b", "vis.patch.w", "vis.pool_q", "head.w", "tok_emb"})
    EXPECT_LT(shard_spec(copied).dim, 0) << copied;
  const MmModel model(testing::small_gpt(4, 2), 1, 3);
  const auto member = tp_member(model, 2, 1);
  ASSERT_EQ(member->all_params().size(), model.all_params().size());
  for (size_t i = 0; i < model.all_params().size(); ++i) {
    const auto& full = model.all_params()[i];
    const auto& part = member->all_params()[i];
    ASSERT_EQ(part.name, full.name);
    const ShardSpec s = shard_spec(full.name);
    EXPECT_EQ(part.t.numel() * (s.dim < 0 ? 1 : 2), full.t.numel()) << full.name;
    EXPECT_TRUE(torch::equal(part.t, shard_of(full.t, s, 1, 2))) << full.name;
  }
  GptConfig three = testing::small_gpt(3, 2);
  three.d_model = 18;
  const MmModel odd(three, 1, 3);
  EXPECT_THROW(tp_member(odd, 2, 0), SpecError);
}

TEST(TrainTensorParallelMm, GradientsMatchOneMember) {
  torch::set_num_threads(1);
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  const MmModel model(testing::small_gpt(4, 2), 2, 11);
  ImageSampler smp(5);
  const int M = 4, b = 2;
  const auto mbs = make_image_microbatches(smp.next(M * b), M, b);
  for (int S : {2, 3}) {
    HintParams hp;
    hp.stages = S;
    hp.microbatches = M;
    const Hint h = make_hint("1f1b", hp);
    SCOPED_TRACE(fmt::format("S={}", S));
    testing::check_two_members_against_reference(model, h, mbs, "rrfp");
  }
}

// rrfp train --model mm-tiny --tensor-parallel 2: the losses follow T = 1
// within 1e-5, and each member of the encoder's group holds less
// activation memory than the whole encoder does.
TEST(TrainTensorParallelMm, TrainingFollowsOneMember) {
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  TrainOptions o;
  o.model = "mm-tiny";
  o.gpt = testing::small_gpt(4, 2);
  o.stages = 2;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 4;
  o.deterministic = true;
  const TrainResult one = train(o);
  o.tensor_parallel = 2;
  const TrainResult two = train(o);
  ASSERT_EQ(two.steps.size(), one.steps.size());
  for (size_t i = 0; i < one.steps.size(); ++i)
    EXPECT_NEAR(two.steps[i].loss, one.steps[i].loss, 1e-5 * one.steps[i].loss) << "step " << i + 1;
  EXPECT_LT(two.steps.back().loss, two.steps.front().loss);
  EXPECT_LT(two.steps[0].peak_activation_per_stage[0], one.steps[0].peak_activation_per_stage[0])
      << "the encoder's heads and MLP columns were not split";
  // A checkpoint holds the gathered model: resuming continues exactly.
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_tp_mm_resume";
  std::filesystem::remove_all(dir);
  o.checkpoint_dir = dir.string();
  o.steps = 2;
  train(o);
  o.steps = 4;
  o.resume = true;
  const auto dir1 = dir.string() + "_for_tp1";
  std::filesystem::remove_all(dir1);
  std::filesystem::copy(dir, dir1);
  const TrainResult tail = train(o);
  ASSERT_EQ(tail.steps.size(), 2u);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(tail.steps[i].loss, two.steps[2 + i].loss) << "resumed, step " << 3 + i;
  // ... and at T = 1: the split rule is not only undone by itself.
  o.tensor_parallel = 1;
  o.checkpoint_dir = dir1;
  const TrainResult tail1 = train(o);
  ASSERT_EQ(tail1.steps.size(), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(tail1.steps[i].loss, two.steps[2 + i].loss, 1e-5 * two.steps[2 + i].loss) << "T=1, step " << 3 + i;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir1);
}

// A task names at most 64 all-reduces (2 a block): mm-tiny's encoder is
// one stage, so 33 encoder blocks in groups are refused before any work,
// as is a gpt-tiny stage of 33 blocks (which more stages would fix).
TEST(TrainTensorParallelMm, AStageOfMoreBlocksThanATasksAllReducesIsRefused) {
  TrainOptions o;
  o.model = "mm-tiny";
  o.gpt = testing::small_gpt(2, 1);
  o.enc_layers = 33;
  o.stages = 2;
  o.steps = 1;
  o.tensor_parallel = 2;
  testing::expect_refused(o, "stage 0 holds 33 transformer blocks, more than the 32 whose all-reduces one task may "
                             "run (mm-tiny's vision encoder is one stage: fewer --enc-layers)");
  o.model = "gpt-tiny";
  o.gpt.layers = 33;
  o.stages = 1;
  testing::expect_refused(o, "stage 0 holds 33 transformer blocks, more than the 32 whose all-reduces one task may "
                             "run (more --stages, or another --partition)");
}

}  // namespace
}  // namespace rrfp::train
