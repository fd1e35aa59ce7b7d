// Gradient-norm clipping (--clip-grad, train/grad_clip.hpp): the norm and
// factor as torch.nn.utils.clip_grad_norm_ takes them, a clip that never
// bites changing no bit, the model's norm the same from the pipeline and
// from the plain loop, and bad values refused. perf.async_reference checks
// the clipped runs against PyTorch's own clip_grad_norm_ step by step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "tests/train_helpers.hpp"
#include "train/grad_clip.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

using testing::losses;

TrainOptions small(int steps) { return testing::small_run(steps); }

std::vector<double> norms(const TrainResult& r) {
  std::vector<double> n;
  for (const auto& s : r.steps) n.push_back(s.grad_norm);
  return n;
}

}  // namespace

TEST(TrainClip, NormAndFactorAsClipGradNorm) {
  const std::vector<torch::Tensor> g = {torch::tensor({3.0f, 4.0f}), torch::tensor({{12.0f}})};
  EXPECT_DOUBLE_EQ(grad_sq_norm(g), 169.0) << "the norm of the per-tensor norms 5 and 12";
  EXPECT_EQ(clip_factor(13.0, 26.0), 1.0) << "within the limit: unchanged";
  EXPECT_EQ(clip_factor(13.0, 13.0), 13.0f / (13.0f + 1e-6f)) << "at the limit: torch's float factor, just below 1";
  EXPECT_NEAR(clip_factor(13.0, 6.5), 0.5, 1e-7);
  const double before = clip_stage_grads(g, 6.5);
  EXPECT_DOUBLE_EQ(before, 13.0);
  EXPECT_NEAR(std::sqrt(grad_sq_norm(g)), 6.5, 1e-5) << "scaled in place to the limit";
  EXPECT_FLOAT_EQ(g[0][1].item<float>(), 2.0f);
}

// A limit far above every norm: the same losses as without --clip-grad,
// bit for bit, synchronous and under PACI; the synchronous steps record the
// model's norm, PACI's none (each stage clips by its own).
TEST(TrainClip, AClipThatNeverBitesChangesNoBit) {
  for (const std::string mode : {"", "paci"}) {
    TrainOptions off = small(4);
    off.async_mode = mode;
    if (!mode.empty()) off.microbatches = 4, off.async_window = 4;
    TrainOptions loose = off;
    loose.clip_grad = 1e9;
    const TrainResult a = train(off), b = train(loose);
    EXPECT_EQ(losses(a), losses(b)) << "mode '" << mode << "'";
    for (double n : norms(a)) EXPECT_EQ(n, -1) << "no clip: no norm taken";
    for (double n : norms(b)) {
      if (mode.empty())
        EXPECT_GT(n, 0);
      else
        EXPECT_EQ(n, -1) << "--async: no model norm";
    }
  }
}

// The norm is the whole model's, whichever way the gradients were made:
// the pipeline's stages on StarPU and the plain LibTorch loop agree, and a
// limit below it changes the next steps' losses the same way in both.
TEST(TrainClip, ModelNormAgreesAcrossExecutorsAndTheClipBites) {
  TrainOptions pipe = small(3);
  pipe.clip_grad = 1e9;
  TrainOptions plain = pipe;
  plain.executor = "plain";
  const auto n = norms(train(pipe)), m = norms(train(plain));
  ASSERT_EQ(n.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(n[k], m[k], 1e-5 * m[k]) << "step " << k + 1;
  pipe.clip_grad = plain.clip_grad = n[0] / 4;
  const TrainResult clipped = train(pipe);
  EXPECT_DOUBLE_EQ(norms(clipped)[0], n[0]) << "the norm before the clip";
  const auto unclipped = losses(train(small(3)));
  EXPECT_EQ(losses(clipped)[0], unclipped[0]) << "step 1's loss is before any update";
  EXPECT_NE(losses(clipped)[2], unclipped[2]);
  const auto a = losses(clipped), b = losses(train(plain));
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(a[k], b[k], 1e-4) << "step " << k + 1;
}

// Clipping keeps no state: a clipped run resumed from its checkpoint
// continues exactly, and the replay executor clips as StarPU does.
TEST(TrainClip, ResumedAndReplayedRunsClipAlike) {
  TrainOptions o = small(6);
  o.clip_grad = 0.5;
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_clip_resume";
  testing::expect_resume_continues(o, dir);
  std::filesystem::remove_all(dir);
  o.steps = 3;
  TrainOptions replay = o;
  replay.executor = "replay";
  const TrainResult a = train(o), b = train(replay);
  const auto n = norms(a);
  ASSERT_GT(*std::max_element(n.begin(), n.end()), o.clip_grad) << "a clip that never bites checks nothing";
  EXPECT_EQ(losses(a), losses(b));
  EXPECT_EQ(n, norms(b));
}

// Under --async each stage clips by its own norm at its own update: a
// limit far below every stage's norm changes the later steps' losses, for
// PACI and reproducible AMDP, and the clipped run repeats bit for bit.
TEST(TrainClip, AsyncStagesClipTheirOwnUpdates) {
  for (const std::string mode : {"paci", "amdp"}) {
    TrainOptions o = small(4);
    o.async_mode = mode;
    o.microbatches = 4;
    o.async_window = 2;
    TrainOptions clipped = o;
    clipped.clip_grad = 1e-3;
    const TrainResult ra = train(o), rb = train(clipped);
    const auto a = losses(ra), b = losses(rb);
    EXPECT_EQ(a[0], b[0]) << mode << ": step 1's loss is before any update";
    EXPECT_NE(a[3], b[3]) << mode;
    EXPECT_EQ(losses(train(clipped)), b) << mode << ": --deterministic repeats";
    for (const auto& r : ra.steps) EXPECT_TRUE(r.stage_grad_norm.empty()) << mode << ": no clip, no norms";
    for (const auto& r : rb.steps) {  // every stage's own norm, above the limit it was clipped to
      ASSERT_EQ(r.stage_grad_norm.size(), 2u) << mode;
      for (double n : r.stage_grad_norm) EXPECT_GT(n, clipped.clip_grad) << mode << " step " << r.step;
    }
    // Each step's norms are that step's: step 1's (before any update) equal
    // a loose limit's bit for bit, step 2's (after a clipped update) do not.
    TrainOptions loose = o;
    loose.clip_grad = 1e9;
    const TrainResult rl = train(loose);
    EXPECT_EQ(rl.steps[0].stage_grad_norm, rb.steps[0].stage_grad_norm) << mode;
    EXPECT_NE(rl.steps[1].stage_grad_norm, rb.steps[1].stage_grad_norm) << mode;
  }
}

// PACI's first update of each stage sums the gradients of step 1's
// microbatches, all made with the initial weights: the stages' own norms
// add up (in squares) to the synchronous step 1's model norm.
TEST(TrainClip, PaciStageNormsAddUpToTheModelsNormAtStepOne) {
  TrainOptions sync = small(2);
  sync.microbatches = 4;
  sync.clip_grad = 1e9;
  TrainOptions paci = sync;
  paci.async_mode = "paci";
  paci.async_window = 2;
  const StepRecord first = train(sync).steps[0];
  const double model = first.grad_norm;
  const std::vector<double> stage = train(paci).steps[0].stage_grad_norm;
  ASSERT_EQ(stage.size(), 2u);
  EXPECT_NEAR(std::sqrt(stage[0] * stage[0] + stage[1] * stage[1]), model, 1e-5 * model);
  // The synchronous step records its stages' parts of the model's norm: PACI's, to rounding.
  ASSERT_EQ(first.stage_grad_norm.size(), 2u);
  for (int s = 0; s < 2; ++s) EXPECT_NEAR(first.stage_grad_norm[s], stage[s], 1e-5 * stage[s]) << "stage " << s;
}

TEST(TrainClip, BadLimitsAreRefused) {
  const auto refused = testing::expect_refused;
  TrainOptions o = small(2);
  o.clip_grad = -1;
  refused(o, "--clip-grad -1 must be a norm >= 0");
  o.clip_grad = std::numeric_limits<double>::quiet_NaN();
  refused(o, "must be a norm >= 0");
}

}  // namespace rrfp::train
