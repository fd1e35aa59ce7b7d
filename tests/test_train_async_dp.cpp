// PACI with data-parallel replicas (--async paci --data-parallel D, docs/
// async.md, "PACI with replicas") on real StarPU workers and LibTorch
// passes: a one-step window is synchronous data parallelism bitwise, every
// copy keeps PACI's drift bound and its 1F1B window of activations under
// every policy, pinned versions repeat under every policy, resume
// continues exactly, and what is not supported is refused by name.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "tests/train_helpers.hpp"
#include "train/async_window.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

using testing::losses;

TrainOptions paci_dp(int stages, int steps) {
  TrainOptions o = testing::paci_run(stages, steps);
  o.data_parallel = 2;  // --accumulate 4 is each replica's share of a step
  return o;
}

// oneDNN (not instrumented) creates its global state lazily, under locks
// ThreadSanitizer cannot see: two copies' first forwards at once are
// reported as a race inside libdnnl when these tests run first in their
// process (scripts/sanitize.sh thread). One synchronous step of one
// pipeline first creates that state on one worker at a time.
class TrainAsyncDataParallel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TrainOptions warm = paci_dp(2, 1);
    warm.async_mode.clear();
    warm.data_parallel = 1;
    train(warm);
  }
};

TEST_F(TrainAsyncDataParallel, OneStepWindowIsSynchronousDataParallelBitwise) {
  TrainOptions a = paci_dp(2, 3);
  a.async_window = 1;  // no update inside a window: each step drains
  TrainOptions s = a;
  s.async_mode.clear();
  const TrainResult ra = train(a), rs = train(s);
  EXPECT_EQ(losses(ra), losses(rs));
  EXPECT_EQ(ra.steps[0].peak_activation_per_device.size(), 4u);  // 2 replicas x 2 stages
}

TEST_F(TrainAsyncDataParallel, EveryCopyKeepsPacisBoundAndWindow) {
  for (int P : {2, 3}) {
    TrainOptions one = paci_dp(P, 3);
    one.data_parallel = 1;
    const TrainResult single = train(one);  // rrfp-fixed: 1F1B's warm-up fills each window
    for (const char* pol : {"rrfp-fixed", "rrfp", "rrfp-wait", "eager", "lws"}) {
      TrainOptions o = paci_dp(P, 4);
      o.policy = pol;
      o.deterministic = o.policy == "rrfp-fixed";  // the freshest weights elsewhere
      const TrainResult r = train(o);
      ASSERT_EQ(r.steps.size(), 4u);
      // The bound of a copy's share of a step (4), not of the step's 8.
      testing::expect_paci_drift(r, P, 4, fmt::format("{} P={}", pol, P));
      for (const auto& st : r.steps) {
        // Each copy holds at most its window, as one pipeline's stage does.
        ASSERT_EQ(static_cast<int>(st.peak_activation_per_device.size()), 2 * P);
        for (int d = 0; d < 2 * P; ++d)
          EXPECT_LE(st.peak_activation_per_device[d], single.steps[0].peak_activation_per_device[d % P])
              << pol << " device " << d;
      }
    }
  }
}

TEST_F(TrainAsyncDataParallel, PinnedVersionsRepeatUnderEveryPolicyAndResumeContinues) {
  TrainOptions o = paci_dp(3, 3);
  o.microbatches = 2;
  o.link_ms = 1;  // jittered links vary the inputs' arrival
  o.link_jitter = 0.9;
  const auto fixed = losses(train(o));
  for (const char* pol : {"rrfp", "eager", "lws"}) {
    o.policy = pol;
    EXPECT_EQ(losses(train(o)), fixed) << pol;
  }
  TrainOptions s = paci_dp(3, 3);
  s.microbatches = 2;
  s.async_mode.clear();
  EXPECT_NE(fixed, losses(train(s))) << "later steps crossed an update: they cannot equal the flushed run";
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_async_dp_resume";
  testing::expect_resume_continues(paci_dp(2, 6), dir);
  std::filesystem::remove_all(dir);
}

TEST_F(TrainAsyncDataParallel, WhatIsNotSupportedIsRefusedByName) {
  TrainOptions o = paci_dp(2, 2);
  o.async_mode = "amdp";
  testing::expect_refused(o, "--async amdp places its own stages (its directions are its copies)");
  o = paci_dp(2, 2);
  o.multi_rank = true;
  testing::expect_refused(o, "--async paci with --data-parallel runs in one process; under mpirun it is not "
                             "supported yet");
  o = paci_dp(2, 2);
  o.data_parallel = 0;
  testing::expect_refused(o, "--data-parallel must be at least 1 replica, got 0");
}

}  // namespace
}  // namespace rrfp::train
