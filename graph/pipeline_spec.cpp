#include "graph/pipeline_spec.hpp"

#include <fmt/format.h>

namespace rrfp {

std::vector<int> PipelineSpec::pipeline_places() const {
  std::vector<int> place(microbatches), seen(pipelines(), 0);
  for (int m = 0; m < microbatches; ++m) place[m] = seen[pipeline_of(m)]++;
  return place;
}

bool PipelineSpec::mixed_backward() const {
  if (split_override.empty()) return false;
  bool any_split = false, any_fused = false;
  for (unsigned char v : split_override) (v ? any_split : any_fused) = true;
  return any_split && any_fused;
}

std::vector<int> PipelineSpec::stages_on(int device) const {
  std::vector<int> out;
  for (int s = 0; s < stages; ++s)
    if (placement[0][s] == device) out.push_back(s);
  return out;
}

void PipelineSpec::validate() const {
  if (stages < 1) throw SpecError(fmt::format("stages must be at least 1 (got {})", stages));
  if (stages > kMaxStages) throw SpecError(fmt::format("stages must be at most {} (got {})", kMaxStages, stages));
  if (devices < 1) throw SpecError(fmt::format("devices must be at least 1 (got {})", devices));
  if (microbatches < 1) throw SpecError(fmt::format("microbatches must be at least 1 (got {})", microbatches));
  if (microbatches > kMaxMicrobatches)
    throw SpecError(fmt::format("microbatches must be at most {} (got {})", kMaxMicrobatches, microbatches));
  if (static_cast<long long>(stages) * microbatches * 3 > kMaxTasks)
    throw SpecError(fmt::format("{} stages x {} microbatches is too many tasks (limit {})", stages, microbatches,
                                kMaxTasks));
  if (placement.empty()) throw SpecError("placement is empty");
  // Each pipeline's stages on some of the devices (data-parallel replicas
  // use disjoint sets, hints/replicate.hpp), every device used by one.
  if (devices > static_cast<long long>(stages) * static_cast<long long>(placement.size()))
    throw SpecError(fmt::format("{} devices but only {} stages: every device needs a stage", devices, stages));
  std::vector<bool> used(devices, false);
  for (size_t p = 0; p < placement.size(); ++p) {
    if (static_cast<int>(placement[p].size()) != stages)
      throw SpecError(fmt::format("placement of pipeline {} has {} entries for {} stages", p, placement[p].size(),
                                  stages));
    for (int s = 0; s < stages; ++s) {
      int d = placement[p][s];
      if (d < 0 || d >= devices)
        throw SpecError(fmt::format("stage {} placed on device {}, outside 0..{}", s, d, devices - 1));
      used[d] = true;
    }
  }
  for (int d = 0; d < devices; ++d)
    if (!used[d]) throw SpecError(fmt::format("device {} holds no stage", d));
  if (!mb_pipeline.empty()) {
    if (static_cast<int>(mb_pipeline.size()) != microbatches)
      throw SpecError("microbatch-to-pipeline map has the wrong size");
    for (int p : mb_pipeline)
      if (p < 0 || p >= pipelines()) throw SpecError(fmt::format("microbatch mapped to unknown pipeline {}", p));
  }
  if (!split_override.empty() && split_override.size() != static_cast<size_t>(stages) * microbatches)
    throw SpecError("split-backward override has the wrong size");
}

static void check_positive(const char* what, int v) {
  if (v < 1) throw SpecError(fmt::format("{} must be at least 1 (got {})", what, v));
}

PipelineSpec PipelineSpec::linear(int stages, int microbatches, bool split) {
  check_positive("stages", stages);
  if (stages > kMaxStages) throw SpecError(fmt::format("stages must be at most {} (got {})", kMaxStages, stages));
  PipelineSpec p;
  p.stages = p.devices = stages;
  p.microbatches = microbatches;
  p.split_backward = split;
  p.placement.assign(1, std::vector<int>(stages));
  for (int s = 0; s < stages; ++s) p.placement[0][s] = s;
  p.placement_name = "linear";
  p.validate();
  return p;
}

PipelineSpec PipelineSpec::interleaved(int devices, int chunks, int microbatches, bool split) {
  check_positive("devices", devices);
  check_positive("chunks", chunks);
  if (static_cast<long long>(devices) * chunks > kMaxStages)
    throw SpecError(fmt::format("{} devices x {} chunks exceeds {} stages", devices, chunks, kMaxStages));
  PipelineSpec p;
  p.devices = devices;
  p.stages = devices * chunks;
  p.microbatches = microbatches;
  p.split_backward = split;
  p.placement.assign(1, std::vector<int>(p.stages));
  for (int s = 0; s < p.stages; ++s) p.placement[0][s] = s % devices;
  p.placement_name = "interleaved";
  p.validate();
  return p;
}

PipelineSpec PipelineSpec::vshape(int devices, int microbatches, bool split) {
  check_positive("devices", devices);
  if (2LL * devices > kMaxStages) throw SpecError("too many devices for a V-shape placement");
  PipelineSpec p;
  p.devices = devices;
  p.stages = 2 * devices;
  p.microbatches = microbatches;
  p.split_backward = split;
  p.placement.assign(1, std::vector<int>(p.stages));
  for (int d = 0; d < devices; ++d) {
    p.placement[0][d] = d;
    p.placement[0][2 * devices - 1 - d] = d;
  }
  p.placement_name = "vshape";
  p.validate();
  return p;
}

PipelineSpec PipelineSpec::explicit_map(std::vector<int> stage_device, int microbatches, bool split) {
  if (stage_device.empty()) throw SpecError("explicit placement is empty");
  PipelineSpec p;
  p.stages = static_cast<int>(stage_device.size());
  int maxd = -1;
  for (int d : stage_device) maxd = std::max(maxd, d);
  p.devices = maxd + 1;
  p.microbatches = microbatches;
  p.split_backward = split;
  p.placement.assign(1, std::move(stage_device));
  p.placement_name = "explicit";
  p.validate();
  return p;
}

int grouped_microbatches(int group, int groups) {
  if (group < 1 || groups < 1) throw SpecError(fmt::format("{} groups of {} microbatches: both must be at least 1", groups, group));
  if (static_cast<long long>(group) * groups > kMaxMicrobatches)
    throw SpecError(fmt::format("{} x {} microbatches in one window is over the limit of {}", group, groups,
                                kMaxMicrobatches));
  return group * groups;
}

}  // namespace rrfp
