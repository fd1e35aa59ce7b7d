// Strict replay: run a hint exactly in its order with given task durations
// (each device waits for its next task's inputs). Used for unit-cost tables,
// for the validator's executability check and by the tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

// Unit costs of the tables: F=1, B=W=1 when split, BW=2 when fused.
double unit_cost(Kind k);

struct ReplayResult {
  bool complete = false;       // false: the strict order deadlocks
  double makespan = 0;
  double bubble_ratio = 0;     // 1 - busy / (devices * makespan)
  std::vector<double> start, end;  // per task (-1 when never run)
  std::vector<double> busy;        // per device
  std::vector<int> peak_inflight;  // per device
  std::vector<int> peak_held;      // per device, until W (Hint::peak_held)
  std::string stuck;               // when !complete: who waits for what
};

ReplayResult replay_strict(const Hint& hint, const std::function<double(int)>& duration);
inline ReplayResult replay_unit(const Hint& hint) {
  return replay_strict(hint, [&](int id) { return unit_cost(hint.graph->task(id).kind); });
}

// The tasks in an order where each device's tasks appear in hint order and
// every task follows its predecessors (how a strict run submits to StarPU);
// empty when the hint cannot run strictly.
std::vector<int> strict_submission_order(const Hint& hint);

// Text grid of a replay: devices as rows, unit time steps as columns, each
// cell the running task or '.' for a bubble. For a deadlocked replay, marks
// the stuck devices with "<-- ERROR HERE: stuck at ..." (as PyTorch does).
std::string timeline_grid(const Hint& hint, const ReplayResult& r);

}  // namespace rrfp
