#include "hints/list_sched.hpp"

#include "hints/gen_util.hpp"

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
  auto key = opt.key ? opt.key : [](const Task& t) { return static_cast<long long>(t.mb) * kMaxStages - t.stage; };

  using Ready = std::set<std::pair<long long, int>>;  // (key, task id)
  std::vector<std::vector<Ready>> ready(D, std::vector<Ready>(3));
  std::vector<int> missing(n), inflight(D, 0);
  // Grouped updates: per (stage, group) its W/BW not yet done, and the
  // tasks held until its update (counted as a missing predecessor).
  const int S = g.spec().stages, M = g.spec().microbatches, G = opt.group;
  if (G < 0 || opt.gate_lag < 0 || (G > 0 && M % G != 0) || (opt.gate_lag > 0 && G == 0))
    throw SpecError(fmt::format("list scheduler: groups of {} (gate {}) do not fit {} microbatches", G, opt.gate_lag, M));
  const int groups = G > 0 ? M / G : 0;
  std::vector<int> writes_left;  // [s * groups + k]: W/BW not yet done
  std::vector<std::vector<int>> held(static_cast<size_t>(S) * std::max(groups, 1));  // released by update (s, k)
  auto writes = [](Kind k) { return k == Kind::W || k == Kind::BW; };
  if (G > 0) {
    writes_left.assign(static_cast<size_t>(S) * groups, 0);
    for (int id = 0; id < n; ++id) {
      const Task& t = g.task(id);
      const int k = t.mb / G;
      if (writes(t.kind)) ++writes_left[t.stage * groups + k];
      // The update each task waits for: the previous group's (W/BW), or
      // the one gate_lag groups back (F).
      const int after = writes(t.kind) ? k - 1 : t.kind == Kind::F && opt.gate_lag > 0 ? k - opt.gate_lag : -1;
      if (after >= 0) {
        held[t.stage * groups + after].push_back(id);
        ++missing[id];
      }
    }
  }
  auto release = [&](int id) {
    if (--missing[id] == 0) ready[g.task(id).device][kind_class(g.task(id).kind)].insert({key(g.task(id)), id});
  };
  for (int id = 0; id < n; ++id) {
    missing[id] += g.preds(id).size();
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
        if (ready[d][c].empty() || (c == 1 && inflight[d] >= opt.cap[d])) continue;
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
      if (t.kind == Kind::F) ++inflight[t.device];
      if (is_backward(t.kind)) --inflight[t.device];
      --left;
      for (int s : g.succs(id)) release(s);
      // The stage's update of this group: it takes no step of its own.
      if (G > 0 && writes(t.kind) && --writes_left[t.stage * groups + t.mb / G] == 0) {
        for (int h : held[t.stage * groups + t.mb / G]) release(h);
      }
    }
  }
  hint.finalize();
}

}  // namespace rrfp
