// Data parallelism as a hint transform: D replicas of a pipeline, each on
// its own devices with its own microbatches, whose copies of a stage
// reduce their gradients before the update (docs/data-parallel.md).
#pragma once

#include "hints/hint.hpp"

namespace rrfp {

// The hint `base` run by `replicas` data-parallel replicas. Replica r has
// devices r*D .. r*D + D - 1 (D = base.devices()) and the base's
// microbatches r*M .. r*M + M - 1 (M = the base's microbatches, as
// Megatron's --num-microbatches is per replica); each of its devices runs
// the base order of its counterpart. Every pipeline of the base (Chimera's
// two) becomes one per replica. replicas = 1 returns `base` unchanged.
// group > 0 numbers the microbatches step by step instead (asynchronous
// training, whose graph holds several steps, docs/async.md): replica r's
// j-th is (j / group) * replicas * group + r * group + j % group, so each
// run of replicas x group microbatches holds `group` of every replica.
// Throws SpecError when replicas < 1, group does not divide M, or the
// result is too large.
Hint replicate(const Hint& base, int replicas, int group = 0);

}  // namespace rrfp
