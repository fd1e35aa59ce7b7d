// PipelineSpec: how many stages, devices and microbatches, and where each
// stage lives. Pure C++; everything else (task graph, hints, runtime,
// simulator) is derived from it.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace rrfp {

// Any user-facing configuration problem. Messages name the problem.
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PipelineSpec {
  int stages = 1;
  int devices = 1;
  int microbatches = 1;
  // Default backward form: split into B (input grad) + W (weight grad), or
  // one fused BW task.
  bool split_backward = false;
  // placement[p][s] = device holding stage s in pipeline p. Most schedules
  // have one pipeline; Chimera has two running in opposite directions.
  std::vector<std::vector<int>> placement;
  // Pipeline of each microbatch (empty: all in pipeline 0).
  std::vector<int> mb_pipeline;
  // Per (stage, microbatch) override of split_backward, indexed s*M+m
  // (empty: none). Imported schedules such as DualPipeV mix both forms.
  std::vector<unsigned char> split_override;
  // linear | interleaved | vshape | explicit | ...; informational.
  std::string placement_name = "linear";

  int pipelines() const { return static_cast<int>(placement.size()); }
  int pipeline_of(int mb) const { return mb_pipeline.empty() ? 0 : mb_pipeline[mb]; }
  int device_of(int stage, int mb) const { return placement[pipeline_of(mb)][stage]; }
  bool is_split(int stage, int mb) const {
    return split_override.empty() ? split_backward
                                  : split_override[static_cast<size_t>(stage) * microbatches + mb] != 0;
  }
  // Per microbatch, its index among its pipeline's microbatches (one
  // pipeline: m itself): what PACI's windows count with data-parallel
  // replicas.
  std::vector<int> pipeline_places() const;
  // True when some (stage, microbatch) is split and another fused.
  bool mixed_backward() const;
  // Stages held by device d in pipeline 0, ascending.
  std::vector<int> stages_on(int device) const;

  // Throws SpecError naming the first problem found.
  void validate() const;

  // stage s on device s.
  static PipelineSpec linear(int stages, int microbatches, bool split);
  // `chunks` stages per device, stage s on device s mod D.
  static PipelineSpec interleaved(int devices, int chunks, int microbatches, bool split);
  // 2D stages; device d holds stages d and 2D-1-d.
  static PipelineSpec vshape(int devices, int microbatches, bool split);
  // Any map stage -> device.
  static PipelineSpec explicit_map(std::vector<int> stage_device, int microbatches, bool split);
};

// Upper bounds that keep every size computation far from overflow.
inline constexpr int kMaxStages = 4096;
inline constexpr int kMaxMicrobatches = 1 << 20;
// Microbatches of `groups` groups of `group` (an asynchronous window:
// --accumulate x --window steps), checked against kMaxMicrobatches before
// the product can overflow. Throws SpecError.
int grouped_microbatches(int group, int groups);
inline constexpr long long kMaxTasks = 1LL << 26;

}  // namespace rrfp
