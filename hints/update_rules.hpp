// The asynchronous methods' update rules (docs/async.md) as extra
// predecessors, for the code that plays a graph out itself (the list
// scheduler, the simulator): with updates after every `group` microbatches
// of a stage, the next group's W/BW wait for the update, and with a gate a
// forward of group k waits for its stage's update of group k - gate_lag.
// The update is "all W/BW of (stage, group) done"; on the runtime it is a
// task and these orders come from its data (runtime/data_plan.hpp).
#pragma once

#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

class UpdateHolds {
 public:
  // group 0 and gate_lag 0: no rules. Throws SpecError when the groups do
  // not fit the graph's microbatches or a gate has no groups.
  UpdateHolds(const TaskGraph& g, int group, int gate_lag);
  // Predecessors task `id` has beyond the graph's edges (0 or 1).
  int extra(int id) const { return extra_.empty() ? 0 : extra_[id]; }
  // Task `id` has ended: the tasks its stage's update (if this completed
  // the group) releases, else none.
  const std::vector<int>& finished(int id) {
    const int u = completed(id);
    return u < 0 ? none_ : held(u);
  }
  // Task `id` has ended: the update it completes (stage * groups + group),
  // or -1 when its group still has writes left; call once per task.
  int completed(int id);
  const std::vector<int>& held(int update) const { return held_[update]; }
  int stage_of(int update) const { return update / groups_; }

 private:
  const TaskGraph& g_;
  int group_ = 0, groups_ = 0;
  std::vector<int> extra_, writes_left_;  // writes_left_[stage * groups + k]
  std::vector<std::vector<int>> held_;    // [stage * groups + k]: released by that update
  const std::vector<int> none_;
};

}  // namespace rrfp
