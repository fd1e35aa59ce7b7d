#include "hints/hint.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace rrfp {

void Hint::finalize() {
  const TaskGraph& g = *graph;
  const int D = g.spec().devices;
  if (static_cast<int>(order.size()) != D)
    throw SpecError(fmt::format("hint '{}' has {} device rows but the placement has {} devices", name, order.size(), D));
  rank.assign(g.size(), -1);
  for (int d = 0; d < D; ++d) {
    for (int pos = 0; pos < static_cast<int>(order[d].size()); ++pos) {
      int id = order[d][pos];
      if (id < 0 || id >= g.size()) throw SpecError(fmt::format("hint '{}': device {} lists an unknown task", name, d));
      if (rank[id] >= 0) throw SpecError(fmt::format("hint '{}': task {} appears twice", name, g.label(id)));
      if (g.task(id).device != d)
        throw SpecError(fmt::format("hint '{}': task {} is on device {} but stage {} is placed on device {}", name,
                                    g.label(id), d, g.task(id).stage, g.task(id).device));
      rank[id] = pos;
    }
  }
  for (int id = 0; id < g.size(); ++id)
    if (rank[id] < 0)
      throw SpecError(fmt::format("hint '{}': task {} (stage {}, microbatch {}) is missing from device {}", name,
                                  g.label(id), g.task(id).stage, g.task(id).mb, g.task(id).device));
  if (!overlap_next.empty()) {
    if (overlap_next.size() != order.size()) throw SpecError("overlap marks do not match the order");
    for (int d = 0; d < D; ++d)
      if (overlap_next[d].size() != order[d].size()) throw SpecError("overlap marks do not match the order");
  }
}

std::vector<int> Hint::peak_inflight() const {
  std::vector<int> peak(order.size(), 0);
  for (size_t d = 0; d < order.size(); ++d) {
    int cur = 0;
    for (int id : order[d]) {
      Kind k = graph->task(id).kind;
      if (k == Kind::F) peak[d] = std::max(peak[d], ++cur);
      else if (is_backward(k)) cur = std::max(0, cur - 1);  // a backward listed before its forward frees nothing
    }
  }
  return peak;
}

std::vector<int> Hint::peak_held() const {
  std::vector<int> peak(order.size(), 0);
  for (size_t d = 0; d < order.size(); ++d) {
    int cur = 0;
    for (int id : order[d]) {
      Kind k = graph->task(id).kind;
      if (k == Kind::F) peak[d] = std::max(peak[d], ++cur);
      else if (k == Kind::W || k == Kind::BW) cur = std::max(0, cur - 1);
    }
  }
  return peak;
}

}  // namespace rrfp
