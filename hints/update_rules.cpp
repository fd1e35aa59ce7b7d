#include "hints/update_rules.hpp"

#include <fmt/format.h>

namespace rrfp {

namespace {
bool writes(Kind k) { return k == Kind::W || k == Kind::BW; }
}  // namespace

UpdateHolds::UpdateHolds(const TaskGraph& g, int group, int gate_lag) : g_(g), group_(group) {
  const int S = g.spec().stages, M = g.spec().microbatches;
  if (group < 0 || gate_lag < 0 || (group > 0 && M % group != 0) || (gate_lag > 0 && group == 0))
    throw SpecError(fmt::format("update groups of {} (gate {}) do not fit {} microbatches", group, gate_lag, M));
  if (group == 0) return;
  groups_ = M / group;
  extra_.assign(g.size(), 0);
  writes_left_.assign(static_cast<size_t>(S) * groups_, 0);
  held_.assign(writes_left_.size(), {});
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    const int k = t.mb / group;
    if (writes(t.kind)) ++writes_left_[t.stage * groups_ + k];
    // The update it waits for: the previous group's (W/BW), or the one
    // gate_lag groups back (F).
    const int after = writes(t.kind) ? k - 1 : t.kind == Kind::F && gate_lag > 0 ? k - gate_lag : -1;
    if (after >= 0) {
      held_[t.stage * groups_ + after].push_back(id);
      extra_[id] = 1;
    }
  }
}

int UpdateHolds::completed(int id) {
  const Task& t = g_.task(id);
  if (groups_ == 0 || !writes(t.kind)) return -1;
  const int at = t.stage * groups_ + t.mb / group_;
  return --writes_left_[at] == 0 ? at : -1;
}

}  // namespace rrfp
