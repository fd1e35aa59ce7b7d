// A hint: for every device, a total order of its tasks. A task's position in
// its device's order is its rank; the runtime prefers ready tasks of better
// (smaller) rank, the strict baseline follows the order exactly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

struct Hint {
  std::string name;
  std::shared_ptr<const TaskGraph> graph;
  std::vector<std::vector<int>> order;  // per device, task ids
  // Optional, same shape as order: 1 where the task and the next one form one
  // overlapped step, PyTorch's "(0F7;7B3)OVERLAP_F_B". Empty when unused.
  std::vector<std::vector<unsigned char>> overlap_next;
  std::vector<int> rank;  // per task id; filled by finalize()

  const PipelineSpec& spec() const { return graph->spec(); }
  int devices() const { return static_cast<int>(order.size()); }
  // Computes rank. Throws SpecError if a task is missing, duplicated or on
  // the wrong device (the structural half of the validator).
  void finalize();
  // Peak number of microbatch-stages in flight (forward started, backward
  // not done) on each device when the order runs as written.
  std::vector<int> peak_inflight() const;
  // Peak number of microbatch-stages whose activations are held (forward
  // started, W not done; the fused BW frees them) on each device: what the
  // activation memory of a split-backward order is, since W still reads
  // most of what F saved. Equals peak_inflight() for fused orders.
  std::vector<int> peak_held() const;
};

}  // namespace rrfp
