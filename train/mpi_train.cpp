#include "train/mpi_train.hpp"

#include <algorithm>

namespace rrfp::train {

bool MpiTrainPlan::mirrored(int s) const {
  for (int t = 0; t < members; ++t)
    if (!mirror[at(s, t)].empty()) return true;
  return false;
}

bool MpiTrainPlan::any_mirrored() const {
  return std::any_of(mirror.begin(), mirror.end(), [](const auto& hops) { return !hops.empty(); });
}

MpiTrainPlan mpi_train_plan(const Hint& hint, int T, int K, int rank, bool deterministic) {
  const PipelineSpec& sp = hint.graph->spec();
  const int S = sp.stages, M = sp.microbatches;
  MpiTrainPlan plan;
  plan.members = T;
  plan.local.assign(static_cast<size_t>(S) * T, 0);
  plan.holders.resize(plan.local.size());
  plan.mirror.resize(plan.local.size());
  plan.local_microbatches.assign(plan.local.size(), 0);
  auto rank_of = [&](int s, int m, int t) { return (sp.device_of(s, m) * T + t) / K; };
  for (int s = 0; s < S; ++s)
    for (int t = 0; t < T; ++t) {
      const int i = plan.at(s, t);
      auto& h = plan.holders[i];
      for (int m = 0; m < M; ++m) {
        h.push_back(rank_of(s, m, t));
        plan.local_microbatches[i] += rank_of(s, m, t) == rank;
      }
      std::sort(h.begin(), h.end());
      h.erase(std::unique(h.begin(), h.end()), h.end());
      plan.local[i] = std::find(h.begin(), h.end(), rank) != h.end();
      if (h.size() < 2) continue;
      if (!deterministic) {
        for (int r : h) plan.mirror[i].push_back({r, -1});
        continue;
      }
      for (int m = 0; m < M; ++m)
        if (m == 0 || rank_of(s, m, t) != rank_of(s, m - 1, t)) plan.mirror[i].push_back({rank_of(s, m, t), m});
    }
  plan.mopt.devices_per_rank = K;
  return plan;
}

}  // namespace rrfp::train
