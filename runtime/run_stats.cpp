#include "runtime/run_stats.hpp"

#include <algorithm>
#include <tuple>

namespace rrfp {

std::vector<int> measured_peak_inflight(const TaskGraph& g, const std::vector<double>& start,
                                        const std::vector<double>& end) {
  const int D = g.spec().devices;
  // (time, delta): at equal times ends (-1) sort before starts (+1).
  std::vector<std::vector<std::pair<double, int>>> ev(D);
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    if (t.kind == Kind::F) ev[t.device].push_back({start[id], +1});
    else if (is_backward(t.kind)) ev[t.device].push_back({end[id], -1});
  }
  std::vector<int> peak(D, 0);
  for (int d = 0; d < D; ++d) {
    std::sort(ev[d].begin(), ev[d].end());
    int cur = 0;
    for (auto& e : ev[d]) peak[d] = std::max(peak[d], cur += e.second);
  }
  return peak;
}

void fill_run_stats(const TaskGraph& g, ExecResult& r) {
  const int D = g.spec().devices;
  r.busy_s.assign(D, 0);
  double first = 1e300, last = 0;
  for (int id = 0; id < g.size(); ++id) {
    r.busy_s[g.task(id).device] += r.end_s[id] - r.start_s[id];
    first = std::min(first, r.start_s[id]);
    last = std::max(last, r.end_s[id]);
  }
  r.makespan_s = g.size() ? last - first : 0;
  r.peak_inflight = measured_peak_inflight(g, r.start_s, r.end_s);
}

}  // namespace rrfp
