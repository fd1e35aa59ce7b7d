// The mirror reduction of a multi-rank run with stage copies (docs/mpi.md,
// "Bidirectional hints"): a stage whose copies live on several ranks has
// its gradient sums added along the plan's hops (MpiTrainPlan::mirror),
// then the last hop's rank sends the finished sum to every other holder,
// so each applies the same update to the same weights. Every rank walks
// the (stage, member) pairs in one order (mirror_order) and each rank's
// sends and receives are a subsequence of one global sequence of
// messages: the first message not yet through has both its ends posted,
// so none can wait forever. After the graph (mirror_reduce), or beside it
// (train/mirror_overlap.hpp).
#pragma once

#include <atomic>
#include <vector>

#include "train/mpi_train.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

// The pairs' indices (MpiTrainPlan::at) in the order every rank reduces
// them: the last stage first, whose backwards end first.
std::vector<int> mirror_order(const MpiTrainPlan& plan);

// This rank's part of pair `i`'s reduction (nothing where it holds no
// copy): afterwards each holder has the full sum of member t of stage s in
// `pipes[t]` (stage_grads). Needs this rank's W/BW passes of the pair
// done. False when `stop` turned true while it waited for a message;
// `hurry`: nothing else runs on this rank now (MpiMessages::wait).
bool mirror_reduce_pair(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank, int i,
                        const std::atomic<bool>& stop, const std::atomic<bool>& hurry);

// After the step's graph: every pair, in mirror_order. Other stages are
// untouched.
void mirror_reduce(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank);

// Every multi-rank run: each microbatch's loss was computed on one rank
// (exact zeros elsewhere); an all-reduce leaves every rank with all of them.
void merge_microbatch_losses(Pipeline& pipe);

}  // namespace rrfp::train
