// The learning-rate schedule (--lr-warmup, --lr-decay, train/lr_schedule.hpp):
// its values, its refusals, and that the trainer applies it per update:
// the first warm-up update equals a constant run at the warmed-up rate, and
// a resumed asynchronous run continues the schedule from each stage's count.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/train_helpers.hpp"
#include "train/lr_schedule.hpp"
#include "train/trainer.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {
namespace {

using testing::losses;

TrainOptions small(int steps) { return testing::small_run(steps); }

}  // namespace

TEST(TrainLrSchedule, WarmupThenCosineOrLinearDecayToTheFloor) {
  LrSchedule s;
  s.peak = 3e-3;
  EXPECT_EQ(s.at(1000), 3e-3) << "constant: the peak itself, every update";
  s.warmup = 3;
  EXPECT_EQ(s.at(3), 3e-3) << "exactly the peak at the warm-up's end";
  s = LrSchedule{};
  s.peak = 1.0;
  s.warmup = 4;
  EXPECT_DOUBLE_EQ(s.at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.at(3), 0.75);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(50), 1.0) << "no decay after the warm-up";
  s.decay = "cosine";
  s.decay_updates = 12;
  s.min_lr = 0.1;
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(6), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)));
  EXPECT_DOUBLE_EQ(s.at(8), 0.55) << "halfway: the mean of peak and floor";
  EXPECT_DOUBLE_EQ(s.at(12), 0.1);
  EXPECT_DOUBLE_EQ(s.at(40), 0.1) << "past the decay: the floor";
  s.decay = "linear";
  EXPECT_DOUBLE_EQ(s.at(6), 0.1 + 0.9 * 0.75);
  EXPECT_DOUBLE_EQ(s.at(12), 0.1);
}

TEST(TrainLrSchedule, BadSchedulesAreRefusedByFlag) {
  const auto refused = testing::expect_refused;
  TrainOptions o = small(4);
  o.lr_warmup = -1;
  refused(o, "--lr-warmup must not be negative");
  o = small(4);
  o.lr_decay = "exponential";
  refused(o, "unknown --lr-decay 'exponential'");
  o = small(4);
  o.lr_decay = "cosine";
  o.min_lr = 1;
  refused(o, "--min-lr 1 must lie in [0, --lr 0.01]");
  o = small(4);
  o.lr_decay = "cosine";
  o.lr_warmup = 4;  // the decay ends at --steps 4
  refused(o, "--lr-decay-steps must exceed --lr-warmup");
  o.lr_decay_steps = 5;
  EXPECT_NO_THROW(Trainer t(o));
}

// Warm-up over 2 updates at --lr 2e-2 updates first at 1e-2: step 2's loss
// is that of a constant 1e-2 run, bit for bit; step 3 follows another rate.
TEST(TrainLrSchedule, FirstWarmupUpdateIsAConstantRunAtItsRate) {
  TrainOptions warm = small(3);
  warm.lr = 2e-2;
  warm.lr_warmup = 2;
  TrainOptions constant = small(3);
  constant.lr = 1e-2;
  const TrainResult warm_run = train(warm);
  const auto a = losses(warm_run), b = losses(train(constant));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
  // --json reports each step's rate and the schedule.
  const auto path = std::filesystem::temp_directory_path() / "rrfp_lr_schedule.json";
  write_train_json(path.string(), warm, warm_run, warm.micro_batch_size);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(j["steps"][0]["lr"].get<double>(), 1e-2);
  EXPECT_EQ(j["steps"][1]["lr"].get<double>(), 2e-2);
  EXPECT_EQ(j["lr"]["warmup_steps"].get<int>(), 2);
  EXPECT_FALSE(j["lr"].contains("min_lr")) << "no decay: no floor to report";
  std::filesystem::remove(path);
  // A decaying schedule is not the constant one.
  TrainOptions decay = small(3);
  decay.lr_decay = "linear";
  EXPECT_NE(losses(train(decay))[2], losses(train(small(3)))[2]);
}

// PACI's stages update at their own times, each its k-th update at rate k;
// the checkpoint's update count (the step: one update per stage and step)
// restores them, so the schedule continues where it stopped (the decay's
// end pinned by --lr-decay-steps: the resumed run's --steps differs).
TEST(TrainLrSchedule, ResumedAsyncRunContinuesTheSchedule) {
  TrainOptions o = small(6);
  o.microbatches = 4;
  o.async_mode = "paci";
  o.async_window = 4;
  o.lr_warmup = 2;
  o.lr_decay = "cosine";
  o.lr_decay_steps = 6;
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_lr_schedule_resume";
  testing::expect_resume_continues(o, dir);
  std::filesystem::remove_all(dir);
}

}  // namespace rrfp::train
