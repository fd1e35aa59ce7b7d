// Small helpers shared by the order generators.
#pragma once

#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

// Appends the backward of (s, m) to a device row: BW, or B then W.
void push_backward(const TaskGraph& g, std::vector<int>& row, int s, int m);

// The greedy generators' priority classes: an input backward (B or fused BW)
// unblocks the device upstream, so it goes first (0); then F (1); W has no
// successor, so it waits (2).
inline int kind_class(Kind k) { return k == Kind::F ? 1 : k == Kind::W ? 2 : 0; }

}  // namespace rrfp
