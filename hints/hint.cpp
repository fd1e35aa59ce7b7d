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

namespace {
// Per device, the peak count of forwards run and not yet released by a
// task of a kind `frees` says, in the order as written. A release listed
// before its forward frees nothing.
template <class Frees>
std::vector<int> peak_count(const Hint& h, Frees frees) {
  std::vector<int> peak(h.order.size(), 0);
  for (size_t d = 0; d < h.order.size(); ++d) {
    int cur = 0;
    for (int id : h.order[d]) {
      const Kind k = h.graph->task(id).kind;
      if (k == Kind::F) peak[d] = std::max(peak[d], ++cur);
      else if (frees(k)) cur = std::max(0, cur - 1);
    }
  }
  return peak;
}
}  // namespace

std::vector<int> Hint::peak_inflight() const { return peak_count(*this, is_backward); }

std::vector<int> Hint::peak_held() const {
  return peak_count(*this, [](Kind k) { return k == Kind::W || k == Kind::BW; });
}

}  // namespace rrfp
