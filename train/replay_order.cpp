#include "train/replay_order.hpp"

#include <algorithm>
#include <numeric>

#include "hints/replay.hpp"

namespace rrfp::train {

std::vector<int> replay_order(const Hint& h, double* predicted_bubble) {
  const ReplayResult r = replay_unit(h);
  if (!r.complete) throw SpecError("hint '" + h.name + "' deadlocks under strict replay: " + r.stuck);
  std::vector<int> ids(h.graph->size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
    if (r.start[a] != r.start[b]) return r.start[a] < r.start[b];
    return h.graph->task(a).device < h.graph->task(b).device;
  });
  if (predicted_bubble) *predicted_bubble = r.bubble_ratio;
  return ids;
}

}  // namespace rrfp::train
