// `rrfp profile`: measures every layer of a model (the first layer, each
// block, the last) the way a pipeline runs it: the model is split into one
// stage per layer, the stages are dealt round-robin to `devices` StarPU CPU
// workers, and a few real training steps (split backward, then fused) are
// timed task by task, so every pass is measured while the other workers
// compute too, with its message copies, as in training. Activation and
// weight bytes come from one microbatch through the same stages on the
// calling thread ("plain" measures the times there too: one pass at a
// time, an idle machine). Torch-free interface.
#pragma once

#include <functional>
#include <string>

#include "sim/profile.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

struct ProfileOptions {
  TrainOptions model;     // model, sizes, micro-batch size, seed, data
  int repetitions = 10;   // timed steps (starpu) or microbatches (plain) per pass, after one warm-up
  std::string executor = "starpu";  // or "plain"
  int devices = 2;        // starpu: CPU workers the layers are dealt to
  int microbatches = 8;   // starpu: per step
};

// Throws SpecError for bad options (as rrfp train would).
ModelProfile profile_model(const ProfileOptions& o, const std::function<void(const std::string&)>& progress = {});

}  // namespace rrfp::train
