// Shared by the training tests: a small gpt-tiny configuration and a small
// deterministic batch of microbatches drawn from the generated corpus.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "train/async_window.hpp"
#include "train/data.hpp"
#include "train/pipeline.hpp"
#include "train/trainer.hpp"

namespace rrfp::train::testing {

// gpt-tiny small enough for exhaustive tests: width 16, 8 tokens a sequence.
inline GptConfig small_gpt(int heads, int layers) {
  GptConfig c;
  c.d_model = 16;
  c.heads = heads;
  c.layers = layers;
  c.seq_len = 8;
  return c;
}

inline std::vector<Microbatch> corpus_batch(const GptConfig& c, int M, int b, std::uint64_t seed) {
  auto text = std::make_shared<const std::string>(generate_corpus(seed, 4096));
  Sampler smp(text, c.seq_len, seed);
  return make_microbatches(smp.next(M * b), M, b, c.seq_len);
}

// A small reproducible run: 2 stages of small_gpt(2, 2), 1F1B, 2
// microbatches of 2, lr 1e-2, --deterministic under rrfp-fixed.
inline TrainOptions small_run(int steps) {
  TrainOptions o;
  o.gpt = small_gpt(2, 2);
  o.stages = 2;
  o.microbatches = 2;
  o.micro_batch_size = 2;
  o.steps = steps;
  o.hint = "1f1b";
  o.lr = 1e-2;
  o.deterministic = true;
  o.policy = "rrfp-fixed";
  return o;
}

// PACI (--async paci) on a tiny gpt-tiny: --accumulate 4, 4-step windows,
// deterministic under rrfp-fixed, fused backward as the paper.
inline TrainOptions paci_run(int stages, int steps) {
  TrainOptions o;
  o.gpt = small_gpt(2, 4);
  o.gpt.seq_len = 16;
  o.stages = stages;
  o.microbatches = 4;  // --accumulate (per replica with --data-parallel)
  o.micro_batch_size = 2;
  o.steps = steps;
  o.hint = "1f1b";
  o.split = 0;
  o.lr = 1e-2;
  o.deterministic = true;
  o.policy = "rrfp-fixed";
  o.async_mode = "paci";
  o.async_window = 4;
  return o;
}

// A PACI run of P stages and `accumulate` microbatches per update (per
// replica) under `what`: every step's recorded drift within the stated
// bound, which is PACI's, none on the last stage, none in the first step
// (no update yet), and the bound reached (a later step's first microbatch
// on stage 0 crosses an update).
inline void expect_paci_drift(const TrainResult& r, int P, int accumulate, const std::string& what) {
  int most = 0;
  for (const auto& st : r.steps) {
    ASSERT_EQ(static_cast<int>(st.drift_max.size()), P) << what;
    for (int s = 0; s < P; ++s) {
      EXPECT_EQ(st.drift_bound[s], paci_drift_bound(P, s, accumulate, 0)) << what;
      EXPECT_LE(st.drift_max[s], st.drift_bound[s]) << what << " step " << st.step << " stage " << s;
      EXPECT_LE(st.drift_mean[s], st.drift_max[s]) << what;
      most = std::max(most, st.drift_max[s]);
    }
    EXPECT_EQ(st.drift_max[P - 1], 0) << what << ": the last stage runs each backward right after its forward";
  }
  for (int s = 0; s < P && !r.steps.empty(); ++s) EXPECT_EQ(r.steps[0].drift_max[s], 0) << what;
  EXPECT_EQ(most, 1) << what;
}

// The losses of a run, step by step.
inline std::vector<double> losses(const TrainResult& r) {
  std::vector<double> l;
  for (const auto& s : r.steps) l.push_back(s.loss);
  return l;
}

// Trains `o` for 6 steps with a checkpoint every 3, then the same run
// stopped after step 3 and resumed: the resumed steps' losses equal the
// full run's. Checkpoints go under `dir` (created afresh; the caller
// removes it). Returns the resumed run's options.
inline TrainOptions expect_resume_continues(TrainOptions o, const std::filesystem::path& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  o.steps = 6;
  o.checkpoint_every = 3;
  o.checkpoint_dir = (dir / "full").string();
  const auto all = losses(train(o));
  TrainOptions part = o;
  part.checkpoint_dir = (dir / "part").string();
  part.steps = 3;
  train(part);
  part.steps = 6;
  part.resume = true;
  const TrainResult rest = train(part);
  EXPECT_EQ(rest.first_step, 4);
  EXPECT_EQ(losses(rest), std::vector<double>(all.begin() + 3, all.end()));
  return part;
}

// Building a Trainer from `o` throws a SpecError whose message contains `what`.
inline void expect_refused(const TrainOptions& o, const std::string& what) {
  try {
    Trainer t(o);
    ADD_FAILURE() << "accepted: " << what;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace rrfp::train::testing
