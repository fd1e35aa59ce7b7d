// What a run's dimensions are: the hint decides them. A CSV hint takes its
// own for --stages / --microbatches / --chunks left at 0 and refuses others
// that disagree; a tuned plan (rrfp tune, --plan) fixes the devices, the
// microbatches, the partition and the hint, and must have been tuned for
// this model and micro-batch size. Torch-free.
#pragma once

#include "hints/hint.hpp"
#include "sched/memory_budget.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

struct ResolvedRun {
  TrainOptions o;  // stages, microbatches (and with a plan: partition, hint name) filled in
  Hint hint;
  // A plan with a memory limit: each device's activation bytes, enforced
  // by the rrfp policies (the limit less the stages' weights and AdamW
  // state, kStateCopies x weights, as the tuner counts them).
  MemoryBudgetOptions memory_budget;
};

// Throws SpecError naming the problem.
ResolvedRun resolve_run(TrainOptions o);

}  // namespace rrfp::train
