#include "train/mpi_train.hpp"

namespace rrfp::train {

MpiTrainPlan mpi_train_plan(const Hint& hint, int T, int K, int rank) {
  const TaskGraph& g = *hint.graph;
  if (g.spec().pipelines() != 1)
    throw SpecError("multi-rank training needs one pipeline (a stage on one device); not " + hint.name);
  MpiTrainPlan plan;
  plan.local_stage.assign(g.spec().stages, 0);
  for (int s = 0; s < g.spec().stages; ++s)
    for (int t = 0; t < T; ++t) plan.local_stage[s] |= (g.spec().device_of(s, 0) * T + t) / K == rank;
  plan.loss_rank = g.spec().device_of(g.spec().stages - 1, 0) * T / K;
  plan.mopt.devices_per_rank = K;
  return plan;
}

}  // namespace rrfp::train
