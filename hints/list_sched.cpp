#include "hints/list_sched.hpp"

#include "hints/gen_util.hpp"
#include "hints/update_rules.hpp"

#include <set>
#include <utility>

#include <fmt/format.h>

namespace rrfp {

void list_schedule(Hint& hint, const ListSchedOptions& opt) {
  const TaskGraph& g = *hint.graph;
  const int D = g.spec().devices, n = g.size();
  if (static_cast<int>(opt.cap.size()) != D) throw SpecError("list scheduler: one cap per device needed");
  for (int d = 0; d < D; ++d)
    if (opt.cap[d] < 1) throw SpecError(fmt::format("list scheduler: device {} has in-flight cap {}", d, opt.cap[d]));
  std::vector<int> held_cap = opt.held_cap;
  if (held_cap.empty()) held_cap.assign(D, n);  // no held cap
  if (static_cast<int>(held_cap.size()) != D) throw SpecError("list scheduler: one held cap per device needed");
  for (int d = 0; d < D; ++d)
    if (held_cap[d] < opt.cap[d])
      throw SpecError(fmt::format("list scheduler: device {} may hold {} but have {} in flight", d, held_cap[d],
                                  opt.cap[d]));
  auto key = opt.key ? opt.key : [](const Task& t) { return static_cast<long long>(t.mb) * kMaxStages - t.stage; };

  using Ready = std::set<std::pair<long long, int>>;  // (key, task id)
  std::vector<std::vector<Ready>> ready(D, std::vector<Ready>(3));
  // held: forwards whose W (or fused BW) is not done, so held >= inflight.
  // When held is at its cap and inflight is not, some microbatch has its B
  // done and its W not: a W is ready, so the held cap adds no stall.
  std::vector<int> missing(n), inflight(D, 0), held(D, 0);
  // Grouped updates (ListSchedOptions::group, gate_lag): extra predecessors.
  UpdateHolds holds(g, opt.group, opt.gate_lag);
  auto release = [&](int id) {
    if (--missing[id] == 0) ready[g.task(id).device][kind_class(g.task(id).kind)].insert({key(g.task(id)), id});
  };
  for (int id = 0; id < n; ++id) {
    missing[id] = g.preds(id).size() + holds.extra(id);
    if (missing[id] == 0) ready[g.task(id).device][kind_class(g.task(id).kind)].insert({key(g.task(id)), id});
  }
  hint.order.assign(D, {});
  hint.overlap_next.clear();
  std::vector<int> step;
  int left = n;
  while (left > 0) {
    step.clear();
    for (int d = 0; d < D; ++d) {
      for (int c = 0; c < 3; ++c) {
        if (ready[d][c].empty() || (c == 1 && (inflight[d] >= opt.cap[d] || held[d] >= held_cap[d]))) continue;
        int id = ready[d][c].begin()->second;
        ready[d][c].erase(ready[d][c].begin());
        step.push_back(id);
        hint.order[d].push_back(id);
        break;
      }
    }
    if (step.empty()) throw SpecError("list scheduler: no device can progress (in-flight caps too small)");
    // Every task of this step ends before the next one starts.
    for (int id : step) {
      const Task& t = g.task(id);
      if (t.kind == Kind::F) {
        ++inflight[t.device];
        ++held[t.device];
      }
      if (is_backward(t.kind)) --inflight[t.device];
      if (t.kind == Kind::W || t.kind == Kind::BW) --held[t.device];
      --left;
      for (int s : g.succs(id)) release(s);
      // The stage's update of this group: it takes no step of its own.
      for (int h : holds.finished(id)) release(h);
    }
  }
  hint.finalize();
}

}  // namespace rrfp
