// The task-graph IR: one node per pass of one microbatch on one stage, edges
// for the data each pass needs. Pure C++; the StarPU runtime and the
// simulator both execute this graph.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

// F: forward. B: backward for the stage input (PyTorch CSV 'I').
// W: backward for the weights. BW: fused full backward (PyTorch CSV 'B').
enum class Kind : std::uint8_t { F = 0, B = 1, W = 2, BW = 3 };
inline constexpr int kNumKinds = 4;

const char* kind_name(Kind k);  // "F", "B", "W", "BW"
char csv_letter(Kind k);        // 'F', 'I', 'W', 'B' (PyTorch notation)
inline bool is_backward(Kind k) { return k == Kind::B || k == Kind::BW; }

struct Task {
  Kind kind;
  int stage;
  int mb;
  int device;
};

class TaskGraph {
 public:
  explicit TaskGraph(PipelineSpec spec);

  const PipelineSpec& spec() const { return spec_; }
  int size() const { return static_cast<int>(tasks_.size()); }
  const Task& task(int id) const { return tasks_[id]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  // Task id of (kind, stage, mb), or -1 when the graph has no such task.
  int find(Kind k, int stage, int mb) const;
  // The backward (B or BW) of (stage, mb).
  int backward_of(int stage, int mb) const;

  // Edges as compressed rows: preds(id) is [begin, end) into an array.
  struct Range {
    const int* b;
    const int* e;
    const int* begin() const { return b; }
    const int* end() const { return e; }
    int size() const { return static_cast<int>(e - b); }
  };
  Range preds(int id) const { return {pred_.data() + pred_off_[id], pred_.data() + pred_off_[id + 1]}; }
  Range succs(int id) const { return {succ_.data() + succ_off_[id], succ_.data() + succ_off_[id + 1]}; }
  long long edge_count() const { return static_cast<long long>(pred_.size()); }

  // PyTorch cell notation: "2F0", "1I3", "0W1", "0B2".
  std::string label(int id) const;
  // Tasks in an order where every task follows its predecessors and, for
  // each (before, after) pair of `also`, `after` follows `before` (PACI's
  // forward windows, runtime/data_plan.hpp); throws SpecError on a cycle.
  std::vector<int> topological_order(const std::vector<std::pair<int, int>>& also = {}) const;
  // Number of tasks placed on each device.
  std::vector<int> tasks_per_device() const;

 private:
  PipelineSpec spec_;
  std::vector<Task> tasks_;
  std::vector<int> index_;  // (s*M+m)*kNumKinds + kind -> id or -1
  std::vector<int> pred_off_, pred_, succ_off_, succ_;
};

}  // namespace rrfp
