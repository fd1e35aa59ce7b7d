// rrfp sim: simulate the synthetic workload with the runtime's arbitration
// core, cost model, a communication model and a memory model.
#include <fstream>

#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "drivers/flags.hpp"
#include "plot/timeline.hpp"
#include "sim/scenario.hpp"
#include "sim/sim_timeline.hpp"

namespace rrfp::cli {

namespace {

struct SimFlags {
  HintFlags hint;
  CostFlags cost;
  std::string policy = "rrfp";
  int slack = 0;
  double latency_ms = 0, bandwidth_gbps = 0, message_mb = 0, act_mb = 1, weight_mb = 1;
  bool no_overlap = false, parallel_links = false;
  std::string json, trace, picture;

  Scenario scenario() const {
    Scenario sc;
    sc.cost = cost.resolve();
    sc.mode = parse_mode(policy);
    if (slack < 0) throw SpecError("--inflight-slack must not be negative");
    sc.inflight_slack = slack;
    if (latency_ms < 0) throw SpecError(fmt::format("--latency-ms {} must not be negative", latency_ms));
    if (bandwidth_gbps < 0) throw SpecError(fmt::format("--bandwidth-gbps {} must be positive", bandwidth_gbps));
    if (message_mb < 0) throw SpecError(fmt::format("--message-mb {} must not be negative", message_mb));
    if (message_mb > 0 && bandwidth_gbps == 0) throw SpecError("--message-mb needs --bandwidth-gbps > 0");
    sc.comm.latency_s = latency_ms * 1e-3;
    if (bandwidth_gbps > 0) sc.comm.bandwidth_Bps = bandwidth_gbps * 1e9 / 8;
    sc.comm.message_bytes = message_mb * 1e6;
    sc.comm.overlap = !no_overlap;
    sc.comm.serialize_links = !parallel_links;
    if (act_mb < 0 || weight_mb < 0) throw SpecError("memory sizes must not be negative");
    return sc;
  }
};

void add_comm_flags(CLI::App* c, SimFlags& f) {
  c->add_option("--latency-ms", f.latency_ms, "per-message link latency (ms)");
  c->add_option("--bandwidth-gbps", f.bandwidth_gbps, "link bandwidth (Gbit/s); 0 = infinite");
  c->add_option("--message-mb", f.message_mb, "activation/gradient message size (MB)");
  c->add_flag("--no-overlap", f.no_overlap, "the sender waits for its transfer (no compute/comm overlap)");
  c->add_flag("--parallel-links", f.parallel_links, "transfers on one link do not queue behind each other");
}

void run(const SimFlags& f) {
  Hint h = f.hint.make();
  Scenario sc = f.scenario();
  for (int s = 0; s < h.spec().stages; ++s) {
    sc.memory.activation_bytes.push_back(f.act_mb * 1e6);
    sc.memory.weight_bytes.push_back(f.weight_mb * 1e6);
  }
  ScenarioResult r = run_scenario(h, sc);
  if (!r.sim.complete) throw SpecError(fmt::format("hint '{}' under {}: {}", h.name, f.policy, r.sim.stuck));
  nlohmann::json j = scenario_json(h, sc, r);
  fmt::print("sim {} policy={} stages={} devices={} microbatches={} variability={} seed={}\n", h.name, f.policy,
             h.spec().stages, h.spec().devices, h.spec().microbatches, sc.cost.var.spec, sc.cost.seed);
  fmt::print("makespan {:.6f} s  lower bound {:.6f} s  ratio {:.3f}  bubble {:.4f}\n", r.sim.makespan, r.lb.bound,
             j["makespan_over_lb"].get<double>(), r.sim.bubble_ratio);
  for (int d = 0; d < h.devices(); ++d)
    fmt::print("  device {}: busy {:.6f} s  peak in-flight {}/{}  activations {:.1f} MB  weights {:.1f} MB\n", d,
               r.sim.busy[d], r.sim.peak_inflight[d], r.sim.inflight_cap[d], r.sim.peak_activation_bytes[d] / 1e6,
               r.sim.weight_bytes[d] / 1e6);
  if (!f.json.empty()) {
    std::ofstream out(f.json);
    if (!(out << j.dump(2) << "\n")) throw SpecError(fmt::format("cannot write '{}'", f.json));
  }
  if (!f.trace.empty() || !f.picture.empty()) {
    Timeline t = to_timeline(h, r.sim, fmt::format("{} ({}, simulated)", h.name, f.policy), 1.0);
    if (!f.trace.empty()) write_chrome_trace(t, f.trace);
    if (!f.picture.empty()) render_timeline(t, f.picture);
  }
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto* c = app.add_subcommand("sim", "Simulate a hint on the synthetic workload (same core and cost model as bench)");
  auto f = std::make_shared<SimFlags>();
  add_hint_flags(c, f->hint, false);
  add_cost_flags(c, f->cost);
  add_comm_flags(c, *f);
  c->add_option("--policy", f->policy, "rrfp (readiness-first) or rrfp-fixed (strict order)");
  c->add_option("--inflight-slack", f->slack, "extra in-flight microbatches over the hint's peak");
  c->add_option("--act-mb", f->act_mb, "activation MB held per in-flight microbatch and stage");
  c->add_option("--weight-mb", f->weight_mb, "weight MB per stage");
  c->add_option("--json", f->json, "write the result as JSON");
  c->add_option("--trace", f->trace, "write a Chrome/Perfetto trace");
  c->add_option("--png,--svg", f->picture, "draw the timeline (.png or .svg)");
  c->require_subcommand(0, 1);
  c->callback([c, f] {
    if (c->get_subcommands().empty()) run(*f);
  });
}

}  // namespace rrfp::cli
