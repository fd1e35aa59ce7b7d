// The learning rate as a function of an optimizer's update count:
// linear warm-up, then constant, cosine or linear decay to a floor, as
// Megatron-LM and nanoGPT schedule GPT training. Keyed on each stage's own
// AdamW count, not on the step: under --async paci the stages update at
// their own times within a window (docs/async.md), each its k-th update at
// rate k. Every stage updates once a step, so at a window's end, where
// checkpoints fall, every count is the step, and a resumed run continues
// the schedule exactly.
#pragma once

#include <cstdint>
#include <string>

namespace rrfp::train {

struct LrSchedule {
  double peak = 3e-3;
  std::int64_t warmup = 0;          // updates from peak / warmup up to peak; 0: none
  std::string decay = "constant";   // constant | cosine | linear
  std::int64_t decay_updates = 0;   // the update at which the decay reaches min_lr
  double min_lr = 0;                // the floor of the decay

  // The rate of update t (1-based). Constant without warm-up returns peak
  // itself, so the default schedule changes no bit of a run.
  double at(std::int64_t t) const;
  // A SpecError naming the flag where the schedule cannot run.
  void check() const;
  bool is_constant() const { return warmup == 0 && decay == "constant"; }
};

}  // namespace rrfp::train
