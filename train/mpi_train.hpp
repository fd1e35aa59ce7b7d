// Multi-rank training (docs/mpi.md): which model stages a rank owns. The
// messages themselves are StarPU data handles that StarPU-MPI moves
// (mpi/mpi_executor.hpp): an F edge carries the producer stage's output
// activation, a backward edge its input gradient, both [b, T, d_model]
// floats copied bit for bit, so every rank computes exactly what one
// process would.
//
// Bidirectional hints (Chimera, the tuner's bidirectional plans) hold a
// copy of a stage on two devices, which may be on two ranks: each copy
// accumulates the gradients of its own direction's microbatches, and the
// copies' sums are reduced between their ranks after the step's graph
// (the mirror reduction, train/mirror_reduce.hpp), so both apply one
// update to the same weights. Data-parallel replicas are copies too. With
// tensor parallelism each member is reduced on its own: member t of a
// stage's copies holds the same shard, and only those shards are added.
#pragma once

#include <vector>

#include "hints/hint.hpp"
#include "mpi/mpi_executor.hpp"

namespace rrfp::train {

// One hop of a stage's mirror reduction: `rank` adds its gradients to the
// sum so far and passes it on. Deterministic runs visit the ranks in
// microbatch order (a run of microbatches per hop, starting at `first_mb`),
// so the sum is added in exactly one process's order; otherwise each
// holder once, in rank order.
struct MirrorHop {
  int rank = 0;
  int first_mb = 0;
};

struct MpiTrainPlan {
  MpiOptions mopt;
  // The tensor-parallel members of a stage (1 without --tensor-parallel).
  // The lists below have one entry per stage and member, at(s, t).
  int members = 1;
  int at(int s, int t) const { return s * members + t; }
  std::vector<unsigned char> local;  // this rank runs member t of stage s (on some copy)
  // The ranks holding member t of a copy of stage s (ascending), and the
  // hops of its mirror reduction (empty when one rank holds every copy).
  std::vector<std::vector<int>> holders;
  std::vector<std::vector<MirrorHop>> mirror;
  // Microbatches of member t of stage s this rank runs: its W/BW passes of
  // the pair, each adding to the pair's gradient sum.
  std::vector<int> local_microbatches;
  // Whether any member of stage s is reduced between ranks; of any stage.
  bool mirrored(int s) const;
  bool any_mirrored() const;
};

// `tp` members per device (member t of device d is slot d*T+t, on rank
// slot / devices_per_rank); `rank` this process's rank.
MpiTrainPlan mpi_train_plan(const Hint& hint, int tp, int devices_per_rank, int rank, bool deterministic);

}  // namespace rrfp::train
