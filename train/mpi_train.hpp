// Multi-rank training (docs/mpi.md): which model stages a rank owns. The
// messages themselves are StarPU data handles that StarPU-MPI moves
// (mpi/mpi_executor.hpp): an F edge carries the producer stage's output
// activation, a backward edge its input gradient, both [b, T, d_model]
// floats copied bit for bit, so every rank computes exactly what one
// process would.
#pragma once

#include <vector>

#include "hints/hint.hpp"
#include "mpi/mpi_executor.hpp"

namespace rrfp::train {

struct MpiTrainPlan {
  MpiOptions mopt;
  std::vector<unsigned char> local_stage;  // per model stage: this rank runs it
  int loss_rank = 0;                       // rank of the last stage: the loss lives there
};

// `tp` members per device (member t of device d is slot d*T+t, on rank
// slot / devices_per_rank); `rank` this process's rank. Throws SpecError
// for hints whose stages live on several devices.
MpiTrainPlan mpi_train_plan(const Hint& hint, int tp, int devices_per_rank, int rank);

}  // namespace rrfp::train
