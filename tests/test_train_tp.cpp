// Megatron-style tensor parallelism in gpt-tiny, in one process: with T = 2
// members per device, the gathered gradients of one iteration match the
// plain LibTorch reference (T = 1) within tolerance for several hints,
// stage counts, microbatch counts and both policies; replicated parameters
// get bitwise the same gradient on both members; and the members entered
// their collectives in one order.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hints/generators.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
#include "train/data.hpp"
#include "train/pipeline.hpp"
#include "tests/tp_helpers.hpp"
#include "tests/train_helpers.hpp"
#include "train/reference.hpp"
#include "train/tp_model.hpp"
#include "train/trainer.hpp"

#include <cmath>
#include <filesystem>

namespace rrfp::train {
namespace {

GptConfig tp_config() { return testing::small_gpt(4, 4); }

TEST(TrainTensorParallel, ShardingRoundTrips) {
  auto w = torch::arange(6 * 4, torch::kFloat32).view({6, 4});
  for (ShardSpec s : {ShardSpec{0, true}, ShardSpec{0, false}, ShardSpec{1, false}, ShardSpec{}}) {
    std::vector<torch::Tensor> parts = {shard_of(w, s, 0, 2), shard_of(w, s, 1, 2)};
    EXPECT_TRUE(torch::equal(unshard(parts, s), w)) << s.dim << s.qkv;
  }
  // q, k and v each give the member its own heads: rows 0, 2, 4 of 6 go to member 0.
  auto q0 = shard_of(w, {0, true}, 0, 2);
  EXPECT_TRUE(torch::equal(q0[1], w[2]));
}

TEST(TrainTensorParallel, GradientsMatchOneMember) {
  torch::set_num_threads(1);
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  const GptConfig cfg = tp_config();
  const GptModel model(cfg, 11);
  int ran = 0;
  for (const char* policy : {"rrfp", "rrfp-fixed"})
    for (const char* hint : {"1f1b", "zb-h1", "gpipe"})
      for (int S : {1, 2})
        for (int M : {1, 4}) {
          HintParams hp;
          hp.stages = S;
          hp.microbatches = M;
          const Hint h = make_hint(hint, hp);
          SCOPED_TRACE(fmt::format("{} {} S={} M={}", policy, hint, S, M));
          const auto mbs = testing::corpus_batch(cfg, M, 2, 40 + M);
          testing::check_two_members_against_reference(model, h, mbs, policy);
          ++ran;
        }
  EXPECT_EQ(ran, 24);
}

TEST(TrainTensorParallel, RefusesAWidthItCannotSplit) {
  GptConfig c = tp_config();
  c.heads = 2;
  const GptModel model(c, 1);
  EXPECT_THROW(GptTpShard(model, 4, 0), SpecError);
}

TrainOptions tp_run(int tp) {
  TrainOptions o;
  o.gpt.d_model = 32;
  o.gpt.heads = 4;
  o.gpt.layers = 2;
  o.gpt.seq_len = 16;
  o.stages = 2;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 6;
  o.hint = "1f1b";
  o.deterministic = true;
  o.tensor_parallel = tp;
  return o;
}

std::vector<double> losses_of(const TrainResult& r) {
  std::vector<double> l;
  for (const auto& s : r.steps) l.push_back(s.loss);
  return l;
}

// rrfp train --tensor-parallel 2: losses follow T = 1 within 1e-5, are
// bitwise equal across policies (deterministic), and checkpoints hold the
// full model: a TP = 2 run resumes exactly, and a TP = 1 run can resume it.
TEST(TrainTensorParallel, TrainingMatchesOneMemberAcrossPoliciesAndResumes) {
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  const auto one = losses_of(train(tp_run(1)));
  TrainOptions o = tp_run(2);
  o.policy = "rrfp";
  const auto two = losses_of(train(o));
  ASSERT_EQ(two.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(two[i], one[i], 1e-5 * one[i]) << "step " << i + 1;
  EXPECT_LT(two.back(), two.front());
  o.policy = "rrfp-fixed";
  o.hint = "zb-h1";
  EXPECT_EQ(losses_of(train(o)), two) << "zb-h1 under rrfp-fixed differs from 1f1b under rrfp";

  const auto dir = std::filesystem::temp_directory_path() / "rrfp_tp_resume";
  std::filesystem::remove_all(dir);
  o = tp_run(2);
  o.steps = 3;
  o.checkpoint_dir = dir.string();
  train(o);
  const auto dir1 = dir.string() + "_for_tp1";
  std::filesystem::remove_all(dir1);
  std::filesystem::copy(dir, dir1);
  o.steps = 6;
  o.resume = true;
  const auto tail = losses_of(train(o));
  ASSERT_EQ(tail.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tail[i], two[3 + i]) << "TP=2 resumed, step " << 4 + i;
  TrainOptions o1 = tp_run(1);
  o1.checkpoint_dir = dir1;
  o1.resume = true;
  const auto tail1 = losses_of(train(o1));
  ASSERT_EQ(tail1.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(tail1[i], two[3 + i], 1e-5 * two[3 + i]) << "TP=1 from TP=2, step " << 4 + i;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir1);
}

// --clip-grad and --eval-every with T = 2: the model's norm counts every
// member's shards and the replicated parameters once, so it, the clipped
// losses and the validation losses (of the gathered model) follow T = 1
// within 1e-5; the clip bites: the last loss differs from the unclipped
// T = 2 run's by far more than that tolerance (AdamW is nearly blind to one
// step's scale, so the first steps barely move).
TEST(TrainTensorParallel, ClipsByTheModelsNormAndEvaluatesTheGatheredModel) {
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  TrainOptions o1 = tp_run(1);
  o1.clip_grad = 1e9;
  o1.steps = 4;
  const TrainResult loose = train(o1);
  TrainOptions loose2 = o1;
  loose2.tensor_parallel = 2;
  const double loose_last = train(loose2).steps.back().loss;
  const double limit = loose.steps[0].grad_norm / 4;
  ASSERT_GT(limit, 0);
  o1.clip_grad = limit;
  o1.eval_every = 2;
  TrainOptions o2 = o1;
  o2.tensor_parallel = 2;
  o2.policy = "rrfp";
  const TrainResult one = train(o1), two = train(o2);
  ASSERT_EQ(two.steps.size(), one.steps.size());
  for (size_t i = 0; i < one.steps.size(); ++i) {
    const StepRecord &a = one.steps[i], &b = two.steps[i];
    EXPECT_NEAR(b.grad_norm, a.grad_norm, 1e-5 * a.grad_norm) << "step " << i + 1;
    EXPECT_NEAR(b.loss, a.loss, 1e-5 * a.loss) << "step " << i + 1;
    if (i % 2 == 1) {
      ASSERT_GT(a.val_loss, 0) << "step " << i + 1 << " evaluates";
      EXPECT_NEAR(b.val_loss, a.val_loss, 1e-5 * a.val_loss) << "step " << i + 1;
    }
  }
  EXPECT_GT(two.steps[0].grad_norm, limit) << "the first step is clipped";
  EXPECT_GT(std::abs(two.steps.back().loss - loose_last), 5e-5 * loose_last) << "the clip changed (almost) nothing";
}

TEST(TrainTensorParallel, BadCombinationsAreRefused) {
  TrainOptions o = tp_run(2);
  o.model = "mm-tiny";
  o.gpt.heads = 2;
  o.tensor_parallel = 4;  // mm-tiny's blocks: 2 heads over 4 members
  testing::expect_refused(o, "--tensor-parallel 4 must divide the heads (2)");
  o = tp_run(2);
  o.executor = "replay";
  EXPECT_THROW(train(o), SpecError);
  o = tp_run(2);
  o.gpt.heads = 2;
  o.tensor_parallel = 4;  // 2 heads over 4 members
  EXPECT_THROW(train(o), SpecError);
  o = tp_run(0);
  EXPECT_THROW(train(o), SpecError);
}

// Trains `o` (T = 1) and the same run with T = 2: the losses agree within
// 1e-5 step by step. Returns the T = 2 run.
TrainResult follows_one_member(const TrainOptions& o) {
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  TrainOptions o2 = o;
  o2.tensor_parallel = 2;
  const TrainResult one = train(o), two = train(o2);
  EXPECT_EQ(two.steps.size(), one.steps.size());
  for (size_t i = 0; i < one.steps.size() && i < two.steps.size(); ++i)
    EXPECT_NEAR(two.steps[i].loss, one.steps[i].loss, 1e-5 * one.steps[i].loss) << "step " << i + 1;
  return two;
}

// --mlp-widths with T = 2: each block's MLP is split over the members
// (an attention-only block has none), the losses follow T = 1 within 1e-5;
// a width the members cannot split is refused by block.
TEST(TrainTensorParallel, UnequalBlockWidthsSplitPerBlock) {
  TrainOptions o = tp_run(1);
  o.gpt.layers = 3;
  o.gpt.mlp_widths = {256, 0, 32};
  o.steps = 3;
  const TrainResult two = follows_one_member(o);
  EXPECT_LT(two.steps.back().loss, two.steps.front().loss);
  o.tensor_parallel = 2;
  o.gpt.mlp_widths = {256, 0, 33};
  testing::expect_refused(o, "--tensor-parallel 2 must divide block 2's MLP width (33)");
}

// --seq-len-dist with T = 2: a microbatch of shorter sequences computes,
// and all-reduces, on its own length; the losses follow T = 1 within 1e-5.
TEST(TrainTensorParallel, VariableLengthSequences) {
  TrainOptions o = tp_run(1);
  o.seq_len_dist = "uniform:3:16";
  o.steps = 3;
  const TrainResult two = follows_one_member(o);
  ASSERT_FALSE(two.steps.empty());
  EXPECT_LT(two.steps[0].tokens, 4 * 2 * 16) << "every sequence at full length: nothing varied";
}

// --partition with T = 2: every member's shards split alike, so the losses
// follow T = 1 with the same uneven partition within 1e-5 (a partition
// never changes the losses), and what shows the split is taken: the stage
// holding one block holds less activation memory than under the default
// split, which gives 3 blocks on 2 stages as 2 + 1.
TEST(TrainTensorParallel, UnevenPartitionSplitsEveryMemberAlike) {
  TrainOptions o = tp_run(1);
  o.gpt.layers = 3;
  o.steps = 3;
  o.partition = {1, 2};
  const TrainResult two = follows_one_member(o);
  ASSERT_FALSE(two.steps.empty());
  o.tensor_parallel = 2;
  o.partition = {};
  const TrainResult other = train(o);
  EXPECT_LT(two.steps[0].peak_activation_per_stage[0], other.steps[0].peak_activation_per_stage[0])
      << "stage 0 holds one block under {1, 2}, two under the default split";
}

}  // namespace
}  // namespace rrfp::train
