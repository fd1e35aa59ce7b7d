#include "hints/gen_greedy.hpp"

#include "hints/gen_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace rrfp {

void greedy_schedule(Hint& hint, const GreedyOptions& opt) {
  const TaskGraph& g = *hint.graph;
  const int D = g.spec().devices, n = g.size();
  if (static_cast<int>(opt.cap.size()) != D) throw SpecError("greedy scheduler: one cap per device needed");
  if (!opt.duration) throw SpecError("greedy scheduler: no durations");
  for (int d = 0; d < D; ++d)
    if (opt.cap[d] < 1) throw SpecError(fmt::format("greedy scheduler: device {} has in-flight cap {}", d, opt.cap[d]));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<int> missing(n);
  std::vector<double> arrive(n, 0);  // when each task's last input is there
  std::vector<std::vector<int>> cand(D);  // per device: tasks whose preds are all placed
  for (int id = 0; id < n; ++id) {
    missing[id] = static_cast<int>(g.preds(id).size());
    if (missing[id] == 0) cand[g.task(id).device].push_back(id);
  }
  std::vector<double> free_at(D, 0);
  std::vector<int> inflight(D, 0);
  std::vector<unsigned char> parked(D, 0);
  const int M = g.spec().microbatches;
  // here[d][m]: stages of microbatch m on device d with F placed and the backward not.
  std::vector<std::vector<int>> here(D, std::vector<int>(M, 0));
  hint.order.assign(D, {});
  hint.overlap_next.clear();
  // Devices are served in the order of their free time, so every task placed
  // later starts no earlier: at a device's free time the set of arrived
  // inputs is final, and the choice there is the one a real run could make.
  for (int placed = 0; placed < n;) {
    int d = -1;
    for (int e = 0; e < D; ++e)
      if (!cand[e].empty() && !parked[e] && (d < 0 || free_at[e] < free_at[d])) d = e;
    if (d < 0) throw SpecError("greedy scheduler: no device can progress (in-flight caps too small)");
    const double t = free_at[d];
    int best = -1;
    double next_arrival = kInf;
    auto better = [&](int a, int b) {
      const Task &x = g.task(a), &y = g.task(b);
      if (kind_class(x.kind) != kind_class(y.kind)) return kind_class(x.kind) < kind_class(y.kind);
      if (x.mb != y.mb) return x.mb < y.mb;
      return x.stage > y.stage;  // push work downstream
    };
    for (int id : cand[d]) {
      // The cap admits new microbatches; a microbatch already in flight here
      // goes on to its later chunk (V-shape, interleaved), or the device
      // would wait for a backward that needs that very forward.
      const Task& ct = g.task(id);
      const bool blocked = ct.kind == Kind::F && inflight[d] >= opt.cap[d] && !here[d][ct.mb];
      if (arrive[id] > t) {
        if (!blocked) next_arrival = std::min(next_arrival, arrive[id]);
        continue;
      }
      if (!blocked && (best < 0 || better(id, best))) best = id;
    }
    if (best < 0) {
      // Idle until an input arrives or another device frees up (and may
      // place a task that feeds or unblocks this one); with neither, wait
      // (parked) until some other device places a task.
      double later = next_arrival;
      for (int e = 0; e < D; ++e)
        if (e != d && free_at[e] > t) later = std::min(later, free_at[e]);
      if (later == kInf)
        parked[d] = 1;
      else
        free_at[d] = later;
      continue;
    }
    std::fill(parked.begin(), parked.end(), 0);
    cand[d].erase(std::find(cand[d].begin(), cand[d].end(), best));
    const Task& bt = g.task(best);
    const double end = t + std::max(0.0, opt.duration(best));
    free_at[d] = end;
    hint.order[d].push_back(best);
    ++placed;
    if (bt.kind == Kind::F) ++inflight[d], ++here[d][bt.mb];
    if (is_backward(bt.kind)) --inflight[d], --here[d][bt.mb];
    for (int s : g.succs(best)) {
      const double at = end + (g.task(s).device != d ? opt.link_s : 0);
      arrive[s] = std::max(arrive[s], at);
      if (--missing[s] == 0) cand[g.task(s).device].push_back(s);
    }
  }
  hint.name = "greedy";
  hint.finalize();
}

}  // namespace rrfp
