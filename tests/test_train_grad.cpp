// Pipeline pass functions against the plain LibTorch reference: every
// parameter gradient after one iteration, for each hint, stage count,
// microbatch count and backward form, with the passes run in the hint's
// (strict replay) order.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "train/data.hpp"
#include "train/mm_model.hpp"
#include "train/pipeline.hpp"
#include "tests/train_helpers.hpp"
#include "train/reference.hpp"
#if __has_include("runtime/executor.hpp")
#include "runtime/executor.hpp"
#define RRFP_TEST_EXECUTOR 1
#endif

namespace rrfp::train {
namespace {

// interleaved-1f1b at S=4 with 2 chunks needs 8 model stages.
GptConfig tiny_config() { return testing::small_gpt(2, 8); }

// Tasks sorted by their start time in a unit-cost strict replay of the hint:
// a sequential order that respects both the hint and the dependencies.
std::vector<int> replay_order(const Hint& h) {
  ReplayResult r = replay_unit(h);
  EXPECT_TRUE(r.complete) << r.stuck;
  std::vector<int> ids(h.graph->size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
    if (r.start[a] != r.start[b]) return r.start[a] < r.start[b];
    return h.graph->task(a).device < h.graph->task(b).device;
  });
  return ids;
}

// Runs one iteration of `h` over `mbs`, in replay order or under a StarPU
// policy; returns gradients by parameter name.
std::map<std::string, torch::Tensor> pipeline_grads(const Model& model, const Hint& h,
                                                    const std::vector<Microbatch>& mbs, bool det,
                                                    double* loss, const std::string& policy = "") {
  Pipeline p(model, h.spec().stages, h.spec().microbatches, det);
  p.begin_step(mbs);
  auto body = [&](int id) {
    const Task& t = h.graph->task(id);
    p.run(t.kind, t.stage, t.mb);
  };
  if (policy.empty()) {
    for (int id : replay_order(h)) body(id);
  } else {
#ifdef RRFP_TEST_EXECUTOR
    ExecOptions eo;
    eo.policy = policy;
    execute(h, body, eo);
#endif
  }
  std::map<std::string, torch::Tensor> out;
  for (int s = 0; s < p.stages(); ++s) {
    auto g = p.stage_grads(s);
    const auto& params = p.stage(s).params();
    EXPECT_EQ(g.size(), params.size());
    for (size_t i = 0; i < params.size(); ++i) out[params[i].name] = g[i];
  }
  *loss = p.loss();
  return out;
}

struct Case {
  std::string hint;
  int chunks;
};

void check_all_hints(const std::string& policy) {
  torch::set_num_threads(1);
  const GptConfig cfg = tiny_config();
  const GptModel model(cfg, 7);
  const std::vector<Case> cases = {{"gpipe", 0}, {"1f1b", 0}, {"zb-h1", 0}, {"interleaved-1f1b", 2}};
  int ran = 0;
  std::vector<std::string> skipped;
  for (int M : {1, 4, 8}) {
    const auto mbs = testing::corpus_batch(cfg, M, 2, 100 + M);
    const ReferenceStep ref = reference_step(model, mbs);
    // Deterministic-mode results of every hint at this M must agree bitwise.
    std::map<std::string, torch::Tensor> det_first;
    double det_loss = 0;
    for (const Case& c : cases)
      for (int S : {1, 2, 4})
        for (int split : {0, 1}) {
          HintParams hp;
          hp.stages = S;
          hp.microbatches = M;
          hp.chunks = c.chunks;
          hp.split = split;
          const std::string what = fmt::format("{} S={} M={} split={}", c.hint, S, M, split);
          Hint h;
          try {
            h = make_hint(c.hint, hp);
          } catch (const SpecError& e) {
            skipped.push_back(what + ": " + e.what());
            continue;
          }
          SCOPED_TRACE(what);
          // Under StarPU: the tolerance check only; bitwise determinism across
          // policies is asserted on whole runs in test_train_loop.cpp.
          for (bool det : policy.empty() ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
            double loss = 0;
            auto grads = pipeline_grads(model, h, mbs, det, &loss, policy);
            ASSERT_EQ(grads.size(), model.all_params().size());
            EXPECT_NEAR(loss, ref.loss, 1e-6 * std::abs(ref.loss));
            for (size_t i = 0; i < model.all_params().size(); ++i) {
              const std::string& name = model.all_params()[i].name;
              EXPECT_TRUE(torch::allclose(grads[name], ref.grads[i], 1e-5, 1e-6))
                  << name << " max diff " << (grads[name] - ref.grads[i]).abs().max().item<float>();
            }
            if (det && det_first.empty()) {
              det_first = grads;
              det_loss = loss;
            } else if (det) {
              EXPECT_EQ(loss, det_loss);
              for (auto& [name, g] : grads) EXPECT_TRUE(torch::equal(g, det_first[name])) << name;
            }
          }
          ++ran;
        }
  }
  if (policy.empty())
    for (const auto& s : skipped) std::printf("[ skipped ] %s\n", s.c_str());
  EXPECT_GE(ran, 3 * 3 * 2 * 2);  // gpipe and 1f1b at least
}

TEST(TrainGrad, EveryHintMatchesReferenceInReplayOrder) { check_all_hints(""); }

#ifdef RRFP_TEST_EXECUTOR
TEST(TrainGrad, EveryHintMatchesReferenceUnderRrfp) { check_all_hints("rrfp"); }
TEST(TrainGrad, EveryHintMatchesReferenceUnderRrfpFixed) { check_all_hints("rrfp-fixed"); }
TEST(TrainGrad, EveryHintMatchesReferenceUnderEager) { check_all_hints("eager"); }
#endif

// mm-tiny: vision stage + language stages, images of varying patch counts.
TEST(TrainGrad, MmTinyMatchesReference) {
  torch::set_num_threads(1);
  GptConfig c = tiny_config();
  c.layers = 2;
  const MmModel model(c, 1, 11);
  ImageSampler smp(5);
  const int M = 4, b = 3;
  const auto mbs = make_image_microbatches(smp.next(M * b), M, b);
  const ReferenceStep ref = reference_step(model, mbs);
  for (const char* name : {"gpipe", "1f1b", "zb-h1"})
    for (int S : {1, 2, 3}) {
      HintParams hp;
      hp.stages = S;
      hp.microbatches = M;
      SCOPED_TRACE(fmt::format("{} S={}", name, S));
      double loss = 0;
      auto grads = pipeline_grads(model, make_hint(name, hp), mbs, false, &loss);
      EXPECT_NEAR(loss, ref.loss, 1e-6 * std::abs(ref.loss));
      for (size_t i = 0; i < model.all_params().size(); ++i) {
        const std::string& n = model.all_params()[i].name;
        EXPECT_TRUE(torch::allclose(grads[n], ref.grads[i], 1e-5, 1e-6)) << n;
      }
    }
}

TEST(TrainGrad, PassOrderViolationIsAnError) {
  const GptConfig cfg = tiny_config();
  const GptModel model(cfg, 1);
  Pipeline p(model, 2, 1, false);
  p.begin_step(testing::corpus_batch(cfg, 1, 2, 3));
  EXPECT_THROW(p.run(Kind::F, 1, 0), std::logic_error);
  EXPECT_THROW(p.run(Kind::BW, 0, 0), std::logic_error);
}

TEST(TrainGrad, OneFOneBHoldsLessActivationThanGPipe) {
  const GptConfig cfg = tiny_config();
  const GptModel model(cfg, 3);
  const int S = 2, M = 8;
  const auto mbs = testing::corpus_batch(cfg, M, 2, 5);
  auto peak0 = [&](const std::string& name) {
    HintParams hp;
    hp.stages = S;
    hp.microbatches = M;
    Hint h = make_hint(name, hp);
    Pipeline p(model, S, M, false);
    p.begin_step(mbs);
    for (int id : replay_order(h)) {
      const Task& t = h.graph->task(id);
      p.run(t.kind, t.stage, t.mb);
    }
    return p.peak_activation_bytes()[0];
  };
  const auto g = peak0("gpipe"), f = peak0("1f1b");
  EXPECT_GT(g, 0);
  // 1F1B keeps at most S microbatches alive on stage 0, GPipe all M.
  EXPECT_LE(f * M, g * S + g / 10) << "gpipe " << g << " 1f1b " << f;
}

}  // namespace
}  // namespace rrfp::train

namespace rrfp::train {
namespace {

// Deterministic mode adds a stage's microbatch gradients in microbatch order
// whatever order W runs in, so every order gives bitwise the plain loop's
// gradients; the buffers are reused from step to step.
TEST(TrainGrad, DeterministicSumIsBitwiseTheSameInAnyWeightOrder) {
  torch::set_num_threads(1);
  const GptConfig cfg = tiny_config();
  const GptModel model(cfg, 4);
  const int M = 4;
  const auto mbs = testing::corpus_batch(cfg, M, 2, 9);
  const ReferenceStep ref = reference_step(model, mbs);
  auto run = [&](Pipeline& p, const std::vector<int>& w_order) {
    p.begin_step(mbs);
    for (int m = 0; m < M; ++m) p.run(Kind::F, 0, m);
    for (int m = 0; m < M; ++m) p.run(Kind::B, 0, m);
    for (int m : w_order) p.run(Kind::W, 0, m);
    return p.stage_grads(0);
  };
  Pipeline p(model, 1, M, true);
  for (const std::vector<int>& order : std::vector<std::vector<int>>{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}}) {
    const auto grads = run(p, order);  // the same Pipeline: step after step
    ASSERT_EQ(grads.size(), ref.grads.size());
    for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(torch::equal(grads[i], ref.grads[i])) << i;
  }
  // A missing microbatch is an error, not a silently smaller sum.
  p.begin_step(mbs);
  for (int m = 0; m < M; ++m) p.run(Kind::F, 0, m);
  for (int m = 0; m < M; ++m) p.run(Kind::B, 0, m);
  for (int m : {0, 2, 3}) p.run(Kind::W, 0, m);
  EXPECT_THROW(p.stage_grads(0), std::logic_error);
}

}  // namespace
}  // namespace rrfp::train
