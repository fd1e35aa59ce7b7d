#include "hints/replay.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace rrfp {

double unit_cost(Kind k) { return k == Kind::BW ? 2.0 : 1.0; }

ReplayResult replay_strict(const Hint& hint, const std::function<double(int)>& duration) {
  const TaskGraph& g = *hint.graph;
  const int D = hint.devices();
  ReplayResult r;
  r.start.assign(g.size(), -1);
  r.end.assign(g.size(), -1);
  r.busy.assign(D, 0);
  r.peak_inflight = hint.peak_inflight();
  r.peak_held = hint.peak_held();
  std::vector<size_t> ptr(D, 0);
  std::vector<double> free_at(D, 0);
  // Worklist of devices whose next task may have become runnable.
  std::vector<int> work;
  for (int d = D - 1; d >= 0; --d) work.push_back(d);
  int done = 0;
  while (!work.empty()) {
    int d = work.back();
    work.pop_back();
    while (ptr[d] < hint.order[d].size()) {
      int id = hint.order[d][ptr[d]];
      double ready = free_at[d];
      bool ok = true;
      for (int p : g.preds(id)) {
        if (r.end[p] < 0) { ok = false; break; }
        ready = std::max(ready, r.end[p]);
      }
      if (!ok) break;
      double dur = duration(id);
      r.start[id] = ready;
      r.end[id] = ready + dur;
      free_at[d] = r.end[id];
      r.busy[d] += dur;
      ++ptr[d];
      ++done;
      for (int s : g.succs(id))
        if (g.task(s).device != d) work.push_back(g.task(s).device);
    }
  }
  r.complete = done == g.size();
  for (int d = 0; d < D; ++d) r.makespan = std::max(r.makespan, free_at[d]);
  double busy = 0;
  for (double b : r.busy) busy += b;
  r.bubble_ratio = r.makespan > 0 ? 1.0 - busy / (D * r.makespan) : 0.0;
  if (!r.complete) {
    std::string s = "strict order cannot progress:";
    for (int d = 0; d < D; ++d) {
      if (ptr[d] >= hint.order[d].size()) continue;
      int id = hint.order[d][ptr[d]];
      std::string waits;
      for (int p : g.preds(id))
        if (r.end[p] < 0) waits += fmt::format("{}{} (device {})", waits.empty() ? "" : ", ", g.label(p), g.task(p).device);
      s += fmt::format("\n  device {} stuck at {} (position {}), waiting for {}", d, g.label(id), ptr[d], waits);
    }
    r.stuck = s;
  }
  return r;
}

std::vector<int> strict_submission_order(const Hint& h) {
  const TaskGraph& g = *h.graph;
  std::vector<int> out, missing(g.size());
  std::vector<size_t> next(h.devices(), 0);
  for (int id = 0; id < g.size(); ++id) missing[id] = g.preds(id).size();
  out.reserve(g.size());
  for (bool moved = true; moved;) {
    moved = false;
    for (int d = 0; d < h.devices(); ++d)
      while (next[d] < h.order[d].size() && missing[h.order[d][next[d]]] == 0) {
        int id = h.order[d][next[d]++];
        out.push_back(id);
        for (int s : g.succs(id)) --missing[s];
        moved = true;
      }
  }
  if (static_cast<int>(out.size()) != g.size()) out.clear();
  return out;
}

std::string timeline_grid(const Hint& hint, const ReplayResult& r) {
  const TaskGraph& g = *hint.graph;
  const int D = hint.devices();
  // Columns are unit steps; a task of duration k occupies k columns.
  int T = static_cast<int>(std::ceil(r.makespan));
  size_t w = 2;
  for (int id = 0; id < g.size(); ++id) w = std::max(w, g.label(id).size());
  std::vector<std::vector<std::string>> cells(D, std::vector<std::string>(T, "."));
  for (int id = 0; id < g.size(); ++id) {
    if (r.start[id] < 0) continue;
    int d = g.task(id).device;
    for (int t = static_cast<int>(r.start[id]); t < static_cast<int>(std::ceil(r.end[id])) && t < T; ++t)
      cells[d][t] = t == static_cast<int>(r.start[id]) ? g.label(id) : "~";
  }
  std::string out = fmt::format("{:>6} ", "step");
  for (int t = 0; t < T; ++t) out += fmt::format("{:>{}} ", t, w);
  out += "\n";
  for (int d = 0; d < D; ++d) {
    out += fmt::format("{:>6} ", fmt::format("dev{}", d));
    for (int t = 0; t < T; ++t) out += fmt::format("{:>{}} ", cells[d][t], w);
    if (!r.complete) {
      size_t n = 0;
      for (int id : hint.order[d]) n += r.end[id] >= 0;
      if (n < hint.order[d].size()) out += fmt::format(" <-- ERROR HERE: stuck at {}", g.label(hint.order[d][n]));
    }
    out += "\n";
  }
  return out;
}

}  // namespace rrfp
