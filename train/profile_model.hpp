// `rrfp profile`: measures every layer of a model (the first layer, each
// block, the last) the way a pipeline worker runs it: the model is split
// into one stage per layer, and each stage's F, B, W and fused BW pass of
// one microbatch is timed on the calling thread with one intra-op thread,
// as a StarPU CPU worker runs a task. Torch-free interface.
#pragma once

#include <functional>
#include <string>

#include "sim/profile.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

struct ProfileOptions {
  TrainOptions model;     // model, sizes, micro-batch size, seed, data
  int repetitions = 10;   // timed microbatches per pass (after one warm-up)
};

// Throws SpecError for bad options (as rrfp train would).
ModelProfile profile_model(const ProfileOptions& o, const std::function<void(const std::string&)>& progress = {});

}  // namespace rrfp::train
