// The mirror reduction of a multi-rank bidirectional run (docs/mpi.md,
// "Bidirectional hints"): a stage whose copies live on several ranks has
// its gradient sums added along the plan's hops (MpiTrainPlan::mirror),
// then the last hop's rank sends the finished sum to every other holder,
// so each applies the same update to the same weights. Blocking MPI
// between steps: every rank walks the stages (and members) in the same
// order, and each rank's sends and receives are a subsequence of one
// global sequence of messages, so none can wait on a message that comes
// later.
#pragma once

#include "train/mpi_train.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

// After the step's graph: every holder of every mirrored stage ends with
// the stage's full sum in `pipes[t]` (stage_grads), one pipeline per
// tensor-parallel member (each member's shards reduced with its own
// copies'). Other stages are untouched.
void mirror_reduce(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank);

// Every multi-rank run: each microbatch's loss was computed on one rank
// (exact zeros elsewhere); an all-reduce leaves every rank with all of them.
void merge_microbatch_losses(Pipeline& pipe);

}  // namespace rrfp::train
