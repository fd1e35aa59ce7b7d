// AMDP (--async amdp, docs/async.md) on real StarPU workers and LibTorch
// passes: a one-step window is synchronous bidirectional training bitwise;
// longer windows cross at most one update per microbatch (and some cross
// one), under three policies, with two and four directions; with
// --deterministic runs repeat bit for bit under any policy and resume
// exactly; bad options are refused by name.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/train_helpers.hpp"
#include "hints/gen_amdp.hpp"
#include "train/amdp_ranks.hpp"
#include "train/async_window.hpp"
#include "train/trainer.hpp"
#include "train/weight_versions.hpp"

namespace rrfp::train {
namespace {

using testing::losses;

TrainOptions amdp(int stages, int directions, int steps) {
  TrainOptions o = testing::paci_run(stages, steps);  // the same small run, another method
  o.microbatches = 2 * directions;  // --accumulate
  o.async_mode = "amdp";
  o.directions = directions;
  return o;
}

}  // namespace

TEST(TrainAmdp, OneStepWindowIsSynchronousChimeraBitwise) {
  TrainOptions a = amdp(2, 2, 3);
  a.async_window = 1;  // each step drains: no update inside a graph
  TrainOptions s = a;
  s.async_mode.clear();
  s.hint = "chimera";  // two directions, one weight set per stage, a flush a step
  EXPECT_EQ(losses(train(a)), losses(train(s)));
}

TEST(TrainAmdp, DriftStaysWithinOneUpdateAndReachesIt) {
  for (const char* pol : {"rrfp-fixed", "rrfp", "rrfp-wait"})
    for (auto [P, dirs] : {std::pair{2, 2}, {4, 4}}) {
      TrainOptions o = amdp(P, dirs, 4);
      o.policy = pol;
      const TrainResult r = train(o);
      ASSERT_EQ(r.steps.size(), 4u);
      int most = 0;
      for (const auto& st : r.steps) {
        ASSERT_EQ(static_cast<int>(st.drift_max.size()), P);
        for (int s = 0; s < P; ++s) {
          EXPECT_EQ(st.drift_bound[s], 1);
          EXPECT_LE(st.drift_max[s], 1) << pol << " P=" << P << " step " << st.step << " stage " << s;
          most = std::max(most, st.drift_max[s]);
        }
      }
      for (int s = 0; s < P; ++s) EXPECT_EQ(r.steps[0].drift_max[s], 0) << "no update before step 1's backwards";
      EXPECT_EQ(most, 1) << pol << " P=" << P << ": the next step's first forwards run before the update";
    }
}

// With --deterministic a forward of group k runs with its stage's weights
// of version k-1 whenever the update of group k-1 lands (docs/async.md,
// "Reproducible AMDP"): every microbatch after a window's first step
// crosses exactly one update, and runs repeat bit for bit, whatever the
// policy does with the timing.
TEST(TrainAmdp, DeterministicRunsRepeatBitwiseUnderEveryPolicy) {
  for (const char* pol : {"rrfp-fixed", "rrfp"})
    for (auto [P, dirs] : {std::pair{2, 2}, {4, 4}}) {
      TrainOptions o = amdp(P, dirs, 4);
      o.policy = pol;
      const TrainResult first = train(o), second = train(o);
      EXPECT_EQ(losses(first), losses(second)) << pol << " P=" << P;
      for (const auto& st : first.steps)
        for (int s = 0; s < P; ++s)
          EXPECT_EQ(st.drift_mean[s], st.step == 1 ? 0.0 : 1.0) << pol << " P=" << P << " step " << st.step;
      TrainOptions sync = o;
      sync.async_window = 1;
      const auto flushed = losses(train(sync));
      EXPECT_EQ(losses(first)[0], flushed[0]) << "step 1: no update before its backwards";
      EXPECT_NE(losses(first), flushed) << "later steps crossed an update: they cannot equal the flushed run";
    }
}

// Without --deterministic a forward takes the freshest weights: the paper's
// rule, less stale, but whether it runs before or after an update on the
// other device is timing. The drift bound holds; the losses stay close.
TEST(TrainAmdp, FreshestWeightsRunsAgreeWithinTolerance) {
  TrainOptions o = amdp(2, 2, 4);
  o.deterministic = false;
  const auto first = losses(train(o)), second = losses(train(o));
  o.async_window = 1;
  const auto flushed = losses(train(o));
  ASSERT_EQ(first.size(), flushed.size());
  EXPECT_EQ(first[0], flushed[0]) << "step 1: no update before its backwards";
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_NEAR(first[i], flushed[i], 0.05 * flushed[i]);
    EXPECT_NEAR(first[i], second[i], 0.02 * second[i]);
  }
}

// The older copy a forward needs is the kept one or the gate's; a pass
// that throws leaves the current weights in place.
TEST(TrainAmdp, WeightSwapPutsTheCurrentWeightsBack) {
  const GptConfig c = testing::small_gpt(2, 2);
  GptModel model(c, 7);
  Pipeline pipe(model, 2, 2, true);
  auto first_param = [&] { return pipe.stage(0).params().front().t.detach().clone(); };
  const torch::Tensor v0 = first_param();
  OlderWeights older(2);
  older.keep(pipe, 0, 0);
  {
    torch::NoGradGuard no_grad;
    pipe.stage(0).params().front().t.variable_data().add_(1.0f);  // "the update"
  }
  const torch::Tensor v1 = first_param();
  try {
    WeightSwap swap(pipe, 0, older.of(pipe, 0, 0, nullptr));
    EXPECT_TRUE(torch::equal(first_param(), v0));
    throw std::runtime_error("the pass failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(torch::equal(first_param(), v1));
  EXPECT_THROW(older.of(pipe, 0, 1, nullptr), std::logic_error);  // never kept, no gate
  EXPECT_THROW(older.of(pipe, 1, 0, nullptr), std::logic_error);
}

TEST(TrainAmdp, ResumeContinuesFromTheCheckpoint) {
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_amdp_resume";
  TrainOptions o = amdp(2, 2, 6);
  o.async_window = 3;  // updates inside every window; the checkpoint at step 3 ends one
  TrainOptions part = testing::expect_resume_continues(o, dir);
  // A checkpoint of another number of directions is not this run's.
  part.directions = 4;
  part.stages = 4;
  part.microbatches = 8;
  EXPECT_THROW(train(part), SpecError);
  std::filesystem::remove_all(dir);
}

// AMDP across ranks: a rank sums only its own microbatches of a stage, in
// microbatch order whatever order its backwards ran in (--deterministic),
// and the other ranks' microbatches do not hold its sum back.
TEST(TrainAmdp, RankSumsItsOwnMicrobatchesInOrder) {
  const GptConfig c = testing::small_gpt(2, 2);
  GptModel model(c, 7);
  const auto mbs = testing::corpus_batch(c, 4, 2, 5);
  auto grads_of = [&](bool det, std::vector<int> order, std::vector<unsigned char> local) {
    Pipeline pipe(model, 2, 4, det);
    for (int s = 0; s < 2 && !local.empty(); ++s) pipe.set_local_microbatches(s, local);
    pipe.begin_step(mbs);
    for (int m : order) {
      pipe.run(Kind::F, 0, m);
      pipe.run(Kind::F, 1, m);
      pipe.run(Kind::BW, 1, m);
      pipe.run(Kind::BW, 0, m);
    }
    std::vector<torch::Tensor> out;
    for (int s = 0; s < 2; ++s)
      for (const auto& g : pipe.stage_grads(s)) out.push_back(g.clone());
    return out;
  };
  const auto ref = grads_of(false, {0, 2}, {});  // added in microbatch order
  const auto got = grads_of(true, {2, 0}, {1, 0, 1, 0});
  ASSERT_EQ(ref.size(), got.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(torch::equal(ref[i], got[i])) << "gradient " << i;
  EXPECT_THROW(grads_of(true, {2, 0}, {}), std::logic_error);  // without the mask: microbatch 1 is missing
}

TEST(TrainAmdp, BadOptionsAreRefusedByName) {
  const auto refused = testing::expect_refused;
  TrainOptions o = amdp(3, 2, 2);
  refused(o, "divisible by 2 (got 3)");
  o = amdp(2, 4, 2);
  refused(o, "divisible by 4 (got 2)");
  o = amdp(6, 4, 2);
  refused(o, "divisible by 4 (got 6)");
  o = amdp(2, 3, 2);
  refused(o, "2 or 4 directions");
  o = amdp(2, 2, 2);
  o.microbatches = 3;
  refused(o, "--accumulate 3 is not a multiple of 2");
  o = amdp(2, 2, 2);
  o.hint = "zb-h1";
  refused(o, "does not accept the hint 'zb-h1'");
  o = amdp(2, 2, 2);
  o.split = 1;
  refused(o, "fused backward");
  o = amdp(2, 2, 2);  // across ranks on GPUs: the packed state lives on the rank's GPU
  o.multi_rank = true;
  o.cuda = true;
  EXPECT_NO_THROW(check_async_options(o));
}

// AMDP across ranks packs a stage's weights behind their version into a
// buffer StarPU-MPI moves; the other rank views them (the older copy of
// --deterministic) and installs only a newer version than it holds.
TEST(TrainAmdp, PackedWeightsCrossToAnotherCopyOnlyWhenNewer) {
  const GptConfig c = testing::small_gpt(2, 2);
  GptModel home_model(c, 7), away_model(c, 8);
  Pipeline home(home_model, 2, 4, true), away(away_model, 2, 4, true);
  const Hint hint = amdp_hint(2, 2, 4, 1);
  AmdpRanks ranks(hint, 4, 1, 1);
  auto same = [](const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!torch::equal(a[i], b[i])) return false;
    return a.size() == b.size();
  };
  const std::size_t bytes = AmdpRanks::state_bytes(home, 1);
  std::vector<std::int64_t> buf(1 + (bytes + 7) / 8, -1);
  AmdpRanks::pack_weights(home, 1, 3, buf.data());
  EXPECT_EQ(buf[0], 3);
  EXPECT_EQ(AmdpRanks::packed_version(buf.data()), 3);
  const auto want = stage_weight_data(home, 1), viewed = AmdpRanks::packed_weights(away, 1, buf.data());
  EXPECT_TRUE(same(want, viewed));
  ASSERT_FALSE(same(stage_weight_data(away, 1), want));  // another seed
  EXPECT_TRUE(ranks.install(away, 1, buf.data()));
  EXPECT_EQ(ranks.installed(1), 3);
  EXPECT_TRUE(same(stage_weight_data(away, 1), want));
  {
    torch::NoGradGuard no_grad;
    stage_weight_data(away, 1).front().add_(1.0f);
  }
  EXPECT_FALSE(ranks.install(away, 1, buf.data()));  // not newer: the copy keeps its weights
  EXPECT_FALSE(same(stage_weight_data(away, 1), want));
}

}  // namespace rrfp::train
