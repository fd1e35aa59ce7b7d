#include "train/mpi_train.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rrfp::train {

MpiTrainPlan mpi_train_plan(const Hint& hint, int T, int K, int rank, bool deterministic) {
  const PipelineSpec& sp = hint.graph->spec();
  const int S = sp.stages, M = sp.microbatches;
  if (sp.pipelines() > 1 && T > 1)
    throw SpecError(fmt::format("tensor parallelism with '{}' under mpirun is not supported: its stages have copies "
                                "on several devices ({}), whose members would each need a reduction of their own "
                                "(one process runs it)",
                                hint.name, sp.placement_name));
  MpiTrainPlan plan;
  plan.local_stage.assign(S, 0);
  plan.holders.resize(S);
  plan.mirror.resize(S);
  auto rank_of = [&](int s, int m, int t) { return (sp.device_of(s, m) * T + t) / K; };
  for (int s = 0; s < S; ++s) {
    for (int m = 0; m < M; ++m)
      for (int t = 0; t < T; ++t) {
        const int r = rank_of(s, m, t);
        plan.local_stage[s] |= r == rank;
        if (t == 0) plan.holders[s].push_back(r);
      }
    auto& h = plan.holders[s];
    std::sort(h.begin(), h.end());
    h.erase(std::unique(h.begin(), h.end()), h.end());
    if (T > 1 || h.size() < 2) continue;  // members of a TP group reduce among themselves (tp_comm)
    if (!deterministic) {
      for (int r : h) plan.mirror[s].push_back({r, -1});
      continue;
    }
    for (int m = 0; m < M; ++m)
      if (m == 0 || rank_of(s, m, 0) != rank_of(s, m - 1, 0)) plan.mirror[s].push_back({rank_of(s, m, 0), m});
  }
  plan.mopt.devices_per_rank = K;
  return plan;
}

}  // namespace rrfp::train
