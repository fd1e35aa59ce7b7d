#include "hints/replicate.hpp"

#include <fmt/format.h>

#include <memory>

namespace rrfp {

Hint replicate(const Hint& base, int replicas, int group) {
  if (replicas < 1) throw SpecError(fmt::format("--data-parallel must be at least 1 replica, got {}", replicas));
  const PipelineSpec& b = base.spec();
  const int D = base.devices(), M = b.microbatches, S = b.stages;
  if (group < 0 || (group > 0 && M % group != 0))
    throw SpecError(fmt::format("replicas' microbatch groups of {} do not divide {} microbatches", group, M));
  if (replicas == 1) return base;
  // Replica r's microbatch m of the base.
  auto mb = [&](int r, int m) { return group > 0 ? (m / group) * replicas * group + r * group + m % group : r * M + m; };
  if (static_cast<long long>(D) * replicas > kMaxStages)
    throw SpecError(fmt::format("--data-parallel {} x {} devices is more than {} devices", replicas, D, kMaxStages));
  if (static_cast<long long>(M) * replicas > kMaxMicrobatches)
    throw SpecError(fmt::format("--data-parallel {} x {} microbatches is more than {}", replicas, M, kMaxMicrobatches));
  PipelineSpec spec;
  spec.stages = S;
  spec.devices = D * replicas;
  spec.microbatches = M * replicas;
  spec.split_backward = b.split_backward;
  spec.placement_name = fmt::format("{} x{} data-parallel", b.placement_name, replicas);
  for (int r = 0; r < replicas; ++r)
    for (const auto& row : b.placement) {
      std::vector<int> moved(row);
      for (int& d : moved) d += r * D;
      spec.placement.push_back(std::move(moved));
    }
  spec.mb_pipeline.resize(spec.microbatches);
  for (int r = 0; r < replicas; ++r)
    for (int m = 0; m < M; ++m) spec.mb_pipeline[mb(r, m)] = r * b.pipelines() + b.pipeline_of(m);
  if (!b.split_override.empty()) {
    spec.split_override.resize(static_cast<size_t>(S) * spec.microbatches);
    for (int s = 0; s < S; ++s)
      for (int r = 0; r < replicas; ++r)
        for (int m = 0; m < M; ++m)
          spec.split_override[static_cast<size_t>(s) * spec.microbatches + mb(r, m)] =
              b.split_override[static_cast<size_t>(s) * M + m];
  }
  Hint h;
  h.name = fmt::format("{}-dp{}", base.name, replicas);
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  const TaskGraph& g = *h.graph;
  const TaskGraph& bg = *base.graph;
  for (int r = 0; r < replicas; ++r)
    for (int d = 0; d < D; ++d) {
      std::vector<int> row;
      row.reserve(base.order[d].size());
      for (int id : base.order[d]) {
        const Task& t = bg.task(id);
        row.push_back(g.find(t.kind, t.stage, mb(r, t.mb)));
      }
      h.order.push_back(std::move(row));
      if (!base.overlap_next.empty()) h.overlap_next.push_back(base.overlap_next[d]);
    }
  h.finalize();
  return h;
}

}  // namespace rrfp
