#include "runtime/bench.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

namespace rrfp {

void sleep_for_seconds(double seconds) {
  // Linux lets a sleeping thread wake up to 50 us late (timer slack); a task
  // of 1-2 ms would run a few percent long, every time. Ask for 1 ns.
  thread_local bool slack_set = (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0), true);
  (void)slack_set;
  // sleep_until a deadline: oversleeping one call does not shorten the next.
  auto until = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  std::this_thread::sleep_until(until);
}

BenchReport run_bench(const Hint& hint, const BenchConfig& cfg) {
  if (cfg.iterations < 1) throw SpecError("--iterations must be at least 1");
  const TaskGraph& g = *hint.graph;
  const int D = hint.devices();
  BenchReport rep;
  rep.hint = hint.name;
  rep.variability = cfg.cost.var.spec;
  rep.stages = g.spec().stages;
  rep.devices = D;
  rep.microbatches = g.spec().microbatches;
  rep.seed = cfg.cost.seed;
  rep.tasks = g.size();
  rep.iterations = cfg.iterations;
  rep.busy_s.assign(D, 0);
  rep.peak_inflight.assign(D, 0);
  for (int it = 0; it < cfg.iterations; ++it) {
    CostOptions c = cfg.cost;
    c.seed = cfg.cost.seed + static_cast<std::uint64_t>(it);
    Durations d = draw(g, c);
    LowerBound lb = lower_bound(g, d);
    ExecOptions o = cfg.exec;
    if (c.link_ms > 0) o.link_delay_s = [&d](int id, int k) { return d.edge(id, k); };
    auto body = [&d](int id) { sleep_for_seconds(d.task_s[id]); };
    ExecResult r = cfg.executor ? cfg.executor(hint, body, o) : execute(hint, body, o);
    rep.policy = r.policy;
    rep.makespans_s.push_back(r.makespan_s);
    rep.lower_bounds_s.push_back(lb.bound);
    rep.makespan_s += r.makespan_s / cfg.iterations;
    rep.lower_bound_s += lb.bound / cfg.iterations;
    rep.critical_path_s += lb.critical_path / cfg.iterations;
    rep.makespan_over_lb += r.makespan_s / lb.bound / cfg.iterations;
    double busy = 0;
    for (int dev = 0; dev < D; ++dev) {
      rep.busy_s[dev] += r.busy_s[dev] / cfg.iterations;
      rep.peak_inflight[dev] = std::max(rep.peak_inflight[dev], r.peak_inflight[dev]);
      busy += r.busy_s[dev];
    }
    rep.bubble_ratio += (1 - busy / (D * r.makespan_s)) / cfg.iterations;
    rep.inflight_cap = r.inflight_cap;
    rep.last = std::move(r);
  }
  return rep;
}

nlohmann::json to_json(const BenchReport& r) {
  return {{"policy", r.policy},
          {"hint", r.hint},
          {"stages", r.stages},
          {"devices", r.devices},
          {"microbatches", r.microbatches},
          {"seed", r.seed},
          {"variability", r.variability},
          {"tasks", r.tasks},
          {"transfers", r.last.transfers},
          {"iterations", r.iterations},
          {"makespan_s", r.makespan_s},
          {"lower_bound_s", r.lower_bound_s},
          {"critical_path_s", r.critical_path_s},
          {"makespan_over_lb", r.makespan_over_lb},
          {"bubble_ratio", r.bubble_ratio},
          {"busy_s", r.busy_s},
          {"peak_inflight", r.peak_inflight},
          {"inflight_cap", r.inflight_cap},
          {"makespans_s", r.makespans_s},
          {"lower_bounds_s", r.lower_bounds_s}};
}

Timeline to_timeline(const Hint& hint, const ExecResult& r, const std::string& title) {
  Timeline t;
  t.title = title;
  for (int d = 0; d < r.devices; ++d) t.tracks.push_back(fmt::format("device {} (worker {})", d, r.device_worker[d]));
  const bool prof = !r.prof_start_s.empty();
  for (int id = 0; id < hint.graph->size(); ++id) {
    Slice s;
    s.track = hint.graph->task(id).device;
    s.name = hint.graph->label(id);
    s.start_s = prof && r.prof_start_s[id] >= 0 ? r.prof_start_s[id] : r.start_s[id];
    s.end_s = prof && r.prof_end_s[id] >= 0 ? r.prof_end_s[id] : r.end_s[id];
    t.slices.push_back(s);
  }
  return t;
}

}  // namespace rrfp
