// Validation and time to a target loss (--eval-every, --target-loss): the
// held-out loss is recorded on the steps that evaluate, a run stops at the
// first evaluation that reaches the target and reports the training time
// and tokens it took, synchronously and with --async paci (whose
// evaluation does not drain); bad options are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/train_helpers.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

TrainOptions small(const std::string& model = "gpt-tiny") {
  TrainOptions o;
  o.model = model;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = 2;
  o.gpt.seq_len = 16;
  o.stages = 2;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 12;
  o.hint = "1f1b";
  o.split = 0;
  o.lr = 1e-2;
  o.deterministic = true;
  o.policy = "rrfp-fixed";
  o.eval_every = 2;
  o.eval_microbatches = 4;
  return o;
}

}  // namespace

TEST(TrainEval, ValidationLossOnEveryKthStepAndTargetStopsTheRun) {
  for (const char* mode : {"", "paci"}) {
    TrainOptions o = small();
    o.async_mode = mode;
    const TrainResult full = train(o);
    std::vector<double> val;
    for (const auto& st : full.steps) {
      if (st.step % 2 == 0) {
        EXPECT_TRUE(std::isfinite(st.val_loss) && st.val_loss > 0) << mode << " step " << st.step;
        val.push_back(st.val_loss);
      } else {
        EXPECT_LT(st.val_loss, 0) << "step " << st.step << " was not due for evaluation";
      }
      EXPECT_GT(st.tokens, 0);
    }
    ASSERT_EQ(val.size(), 6u);
    EXPECT_LT(val.back(), val.front()) << mode << ": the model learns what it did not train on";
    // The first evaluation at or below the loss of step 6 is step 6's.
    o.target_loss = val[2];
    const TrainResult r = train(o);
    ASSERT_TRUE(r.target.reached) << mode;
    int first = -1;
    for (size_t i = 0; i < val.size() && first < 0; ++i)
      if (val[i] <= o.target_loss) first = 2 * static_cast<int>(i + 1);
    EXPECT_EQ(r.target.step, first) << mode;
    // Synchronous runs stop at the target; --async ones at the end of the
    // window (8 steps) that reached it: its weights are a step's own there.
    const int stop = *mode ? (first + 7) / 8 * 8 : first;
    EXPECT_EQ(static_cast<int>(r.steps.size()), stop) << mode << ": stops at the target";
    double secs = 0, toks = 0;
    for (const auto& st : r.steps)
      if (st.step <= first) secs += st.step_s, toks += st.tokens;
    EXPECT_DOUBLE_EQ(r.target.seconds, secs);
    EXPECT_DOUBLE_EQ(r.target.tokens, toks);
    // A run that stops at its target leaves its checkpoint there.
    const auto dir = std::filesystem::temp_directory_path() / ("rrfp_eval_target" + std::string(mode));
    std::filesystem::remove_all(dir);
    o.checkpoint_dir = dir.string();
    train(o);
    TrainOptions more = o;
    more.resume = true;
    more.target_loss = 0;
    EXPECT_EQ(Trainer(more).next_step(), stop + 1) << mode;
    std::filesystem::remove_all(dir);
    o.checkpoint_dir.clear();
    o.target_loss = 1e-6;  // out of reach
    const auto json = std::filesystem::temp_directory_path() / ("rrfp_eval_missed" + std::string(mode) + ".json");
    o.json_path = json.string();
    EXPECT_FALSE(train(o).target.reached);
    o.json_path.clear();
    // --json says so with nulls, not a step -1 after 0 s.
    const nlohmann::json t = nlohmann::json::parse(std::ifstream(json))["target"];
    EXPECT_EQ(t["reached"], false) << mode;
    EXPECT_TRUE(t["step"].is_null() && t["seconds"].is_null() && t["tokens"].is_null()) << t.dump();
    std::filesystem::remove(json);
  }
}

// Every K steps and after the last: 5 steps, K = 2, evaluate 2, 4 and 5.
TEST(TrainEval, TheLastStepIsEvaluatedToo) {
  TrainOptions o = small();
  o.steps = 5;
  const TrainResult r = train(o);
  ASSERT_EQ(r.steps.size(), 5u);
  for (const auto& st : r.steps) EXPECT_EQ(st.val_loss > 0, st.step % 2 == 0 || st.step == 5) << "step " << st.step;
}

TEST(TrainEval, MmTinyEvaluatesHeldOutImages) {
  TrainOptions o = small("mm-tiny");
  o.steps = 2;
  const TrainResult r = train(o);
  EXPECT_GT(r.steps[1].val_loss, 0);
}

// --async evaluation does not drain: each stage keeps its weights as its
// update of a due step leaves them, and the run trains as it would
// without evaluating (docs/async.md, "Evaluation and checkpoints").
TEST(TrainEval, AsyncEvaluationKeepsTheStepsWeightsAndDoesNotDrain) {
  for (const char* mode : {"paci", "amdp"}) {
    TrainOptions o = small();
    o.async_mode = mode;
    o.steps = 16;  // two windows: the second starts from the weights the first ended with, evaluated or not
    o.async_window = 8;
    o.eval_every = 16;  // the last step only (0 would not hold the validation split out of training)
    const TrainResult plain = train(o);
    o.eval_every = 2;
    const TrainResult evaluated = train(o);
    ASSERT_EQ(evaluated.steps.size(), plain.steps.size());
    for (size_t i = 0; i < plain.steps.size(); ++i)
      EXPECT_EQ(evaluated.steps[i].loss, plain.steps[i].loss) << mode << " step " << i + 1 << ": evaluation drained";
    // Step 4's weights, kept mid-window, are those a 4-step run ends with:
    // the forwards of steps 5-8 it interleaves change no weights.
    o.eval_every = 4;
    o.steps = 8;
    const TrainResult mid = train(o);
    o.steps = 4;
    const TrainResult ends = train(o);
    ASSERT_GT(ends.steps[3].val_loss, 0);
    EXPECT_DOUBLE_EQ(mid.steps[3].val_loss, ends.steps[3].val_loss) << mode;
    EXPECT_NE(mid.steps[7].val_loss, mid.steps[3].val_loss) << mode << ": step 8 evaluated other weights";
    for (int i = 0; i < 4; ++i) EXPECT_EQ(mid.steps[i].loss, ends.steps[i].loss) << mode << " step " << i + 1;
  }
}

TEST(TrainEval, BadOptionsAreRefusedByName) {
  const auto refused = testing::expect_refused;
  TrainOptions o = small();
  o.eval_every = 0;
  o.target_loss = 2;
  refused(o, "--target-loss needs --eval-every");
  o = small();
  o.eval_every = -1;
  refused(o, "--eval-every must not be negative");
  o = small();
  o.eval_microbatches = 0;
  refused(o, "--eval-microbatches must be at least 1");
}

}  // namespace rrfp::train
