// Small helpers shared by the order generators.
#pragma once

#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

// Appends the backward of (s, m) to a device row: BW, or B then W.
void push_backward(const TaskGraph& g, std::vector<int>& row, int s, int m);

}  // namespace rrfp
