// Multi-rank training (docs/mpi.md): which model stages a rank owns, and
// the messages between ranks. An F edge carries the producer stage's output
// activation, a backward edge its input gradient; both are [b, T, d_model]
// float tensors in gpt-tiny, copied bit for bit, so every rank computes
// exactly what one process would.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "hints/hint.hpp"
#include "runtime/mpi_executor.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

struct MpiTrainPlan {
  MpiOptions mopt;                       // payload hooks over `pipe`
  std::vector<unsigned char> local_stage;  // per model stage: this rank runs it
  int loss_rank = 0;                     // rank of the last stage: the loss lives there
};

// `shape` of every message ({b, T, d_model}); `rank` this process's rank.
// Throws SpecError for hints whose stages live on several devices.
// With tensor parallelism `pipes` holds one pipeline per member (member t
// of device d is slot d*T+t, on rank slot / devices_per_rank) and
// local_stage says whether this rank runs any member of the stage.
MpiTrainPlan mpi_train_plan(const Hint& hint, const std::vector<Pipeline*>& pipes, int devices_per_rank, int rank,
                            std::vector<std::int64_t> shape);

}  // namespace rrfp::train
