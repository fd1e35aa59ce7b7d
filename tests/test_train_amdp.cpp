// AMDP (--async amdp, docs/async.md) on real StarPU workers and LibTorch
// passes: a one-step window is synchronous bidirectional training bitwise;
// longer windows cross at most one update per microbatch (and some cross
// one), under three policies, with two and four directions; runs agree
// within tolerance and resume; bad options are refused by name.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/train_helpers.hpp"
#include "train/async_window.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

using testing::losses;

TrainOptions amdp(int stages, int directions, int steps) {
  TrainOptions o;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = 4;
  o.gpt.seq_len = 16;
  o.stages = stages;
  o.microbatches = 2 * directions;  // --accumulate
  o.micro_batch_size = 2;
  o.steps = steps;
  o.split = 0;
  o.lr = 1e-2;
  o.deterministic = true;
  o.policy = "rrfp-fixed";
  o.async_mode = "amdp";
  o.directions = directions;
  o.async_window = 4;
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

// Not bitwise reproducible (docs/async.md, "Mirror groups"): a stage's
// weights are one tensor set here, and whether a forward on the mirror
// device runs before or after the home device's update is timing. The
// drift bound holds either way; the losses stay close.
TEST(TrainAmdp, RunsAgreeWithinToleranceAndReallyAsynchronous) {
  const TrainOptions o = amdp(2, 2, 4);
  const auto first = losses(train(o)), second = losses(train(o));
  TrainOptions s = o;
  s.async_window = 1;
  const auto sync = losses(train(s));
  EXPECT_EQ(first[0], sync[0]) << "step 1: no update before its backwards";
  EXPECT_NE(first, sync) << "later steps crossed an update: they cannot equal the flushed run";
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_NEAR(first[i], sync[i], 0.05 * sync[i]);
    EXPECT_NEAR(first[i], second[i], 0.02 * second[i]);
  }
}

TEST(TrainAmdp, ResumeContinuesFromTheCheckpoint) {
  const auto dir = std::filesystem::temp_directory_path() / "rrfp_amdp_resume";
  TrainOptions o = amdp(2, 2, 6);
  o.async_window = 1;  // windows of one step drain: this run is deterministic
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
  o = amdp(2, 2, 2);  // across ranks the mirror sums and weights travel as host data
  o.multi_rank = true;
  o.cuda = true;
  try {
    check_async_options(o);
    ADD_FAILURE() << "--async amdp --cuda under mpirun was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("as host data: no --cuda"), std::string::npos) << e.what();
  }
}

}  // namespace rrfp::train
