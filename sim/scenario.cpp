#include "sim/scenario.hpp"

#include <cmath>

namespace rrfp {

ScenarioResult run_scenario(const Hint& hint, const Scenario& sc) {
  const TaskGraph& g = *hint.graph;
  validate(sc.cost);
  Durations d = draw(g, sc.cost);
  SimOptions o;
  o.mode = sc.mode;
  o.inflight_slack = sc.inflight_slack;
  o.inflight_cap = sc.inflight_cap;
  o.wait = sc.wait;
  o.duration = [&d](int id) { return d.task_s[id]; };
  o.comm = sc.comm;
  o.comm.extra = [&g, &d](int from, int to) {
    int k = 0;
    for (int p : g.preds(to)) {
      if (p == from) return d.edge(to, k);
      ++k;
    }
    return 0.0;
  };
  o.memory = sc.memory;
  o.memory_budget = sc.memory_budget;
  o.update_group = sc.update_group;
  o.gate_lag = sc.gate_lag;
  o.update_s = sc.update_group > 0 ? sc.update_s : 0;
  // The bound counts every cross-device message's least time too: the
  // link's latency and its wire time (as the simulator charges them).
  Durations with_comm = d;
  const CommModel& c = sc.comm;
  const double least = c.latency_s + (std::isinf(c.bandwidth_Bps) ? 0 : c.message_bytes / c.bandwidth_Bps);
  if (least > 0)
    for (int id = 0; id < g.size(); ++id) {
      int k = 0;
      for (int p : g.preds(id)) {
        if (g.task(p).device != g.task(id).device) with_comm.edge_s[with_comm.edge_off[id] + k] += least;
        ++k;
      }
    }
  ScenarioResult r{simulate(hint, o), lower_bound(g, with_comm)};
  return r;
}

nlohmann::json scenario_json(const Hint& hint, const Scenario& sc, const ScenarioResult& r) {
  const PipelineSpec& sp = hint.spec();
  const SimResult& s = r.sim;
  return {{"policy", mode_policy_name(sc.mode)},
          {"simulated", true},
          {"hint", hint.name},
          {"stages", sp.stages},
          {"devices", sp.devices},
          {"microbatches", sp.microbatches},
          {"split_backward", sp.split_backward},
          {"seed", sc.cost.seed},
          {"variability", variability_label(sc.cost)},
          {"mirror_reduce", sc.comm.mirror_after_graph ? "after-graph" : "overlap"},
          {"tasks", hint.graph->size()},
          {"complete", s.complete},
          {"makespan_s", s.makespan},
          {"lower_bound_s", r.lb.bound},
          {"makespan_over_lb", r.lb.bound > 0 ? s.makespan / r.lb.bound : 0.0},
          {"bubble_ratio", s.bubble_ratio},
          {"waits", s.waits},
          {"busy_s", s.busy},
          {"peak_inflight", s.peak_inflight},
          {"inflight_cap", s.inflight_cap},
          {"peak_activation_bytes", s.peak_activation_bytes},
          {"weight_bytes", s.weight_bytes}};
}

}  // namespace rrfp
