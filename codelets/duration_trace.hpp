// Trace-driven workloads: the per-task durations a real `rrfp train --trace`
// recorded, replayed by `rrfp sim --durations` and `rrfp bench --durations`
// instead of the synthetic cost model's draws (codelets/cost_model.hpp).
//
// Exact replay: a graph with the trace's stages takes each (stage, pass
// kind, microbatch) from one recorded step, the step picked by the seed.
// A dualpipev trace, with fused and split backwards, replays too (its
// other form derived: DurationTrace::value).
// Resampling: with more stages or microbatches than the trace, microbatch
// mb draws one recorded (step, microbatch) pair, seeded by (seed, mb), and
// task (kind, stage s of N, mb) takes that pair's duration of trace stage
// floor(s * S_trace / N): each stage's recorded distribution, with a
// microbatch's costs correlated across stages as they were measured (a
// large image is slow on every encoder stage). What-ifs at 8 to 128 stages
// use measured distributions. Pure C++ (reads the trace with
// plot/timeline.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

struct DurationTrace {
  std::string source, title;  // the path; the trace's process name ("rrfp train gpt-tiny 1f1b S=2 M=4")
  std::string model;          // from the title
  int stages = 0, microbatches = 0, steps = 0;
  bool fused = false;         // backward recorded as B (BW) rather than I + W
  // Both forms, one per (stage, microbatch), as dualpipev runs: a form a
  // microbatch did not record is derived from the other (value()).
  bool mixed = false;
  // Per (stage * kNumKinds + kind) * microbatches + mb: one duration per
  // step, in seconds, in step order.
  std::vector<std::vector<double>> cell;
  // Per stage * kNumKinds + kind: every recorded duration of that pass.
  std::vector<std::vector<double>> pooled;
  // Mixed traces, per stage: mean I / (mean I + mean W) over its split
  // microbatches (value()); -1 where the stage never ran split.
  std::vector<double> input_share;

  const std::vector<double>& at(Kind k, int stage, int mb) const {
    return cell[(static_cast<size_t>(stage) * kNumKinds + static_cast<int>(k)) * microbatches + mb];
  }
  const std::vector<double>& pool(Kind k, int stage) const {
    return pooled[static_cast<size_t>(stage) * kNumKinds + static_cast<int>(k)];
  }
  // The duration of pass (k, stage, mb) at `step`. In a mixed trace, a
  // fused backward the microbatch ran split is its I + W, and a split one
  // it ran fused is its B times the stage's mean share of I (or W) in
  // I + W over the microbatches that ran split.
  double value(Kind k, int stage, int mb, int step) const;
};

// Reads a Chrome trace written by `rrfp train --trace`. Throws SpecError
// naming the file and the problem: unreadable or malformed JSON, not a
// training trace, a slice that is not a pass ("2F0") or an optimizer step
// ("opt1"), a negative duration, a pass recorded more often in one step
// than once, or a cell missing from some step (in a mixed trace: a
// microbatch of a stage with neither a fused nor a whole split backward).
DurationTrace read_duration_trace(const std::string& path);

// Throws SpecError when `g` cannot take its durations from `t`: fewer stages
// than the trace, a backward form the trace did not record (split vs
// fused), or `expect_model` (when not empty) is not the trace's model.
void check_trace_fits(const DurationTrace& t, const TaskGraph& g, const std::string& expect_model = "");

// Duration in seconds of task `task` of `g` under seed `seed` (see above).
double trace_duration(const DurationTrace& t, const TaskGraph& g, int task, std::uint64_t seed);

}  // namespace rrfp
