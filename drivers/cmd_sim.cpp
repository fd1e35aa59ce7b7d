// rrfp sim: simulate the synthetic workload with the runtime's arbitration
// core, cost model, a communication model and a memory model.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "drivers/commands.hpp"
#include "drivers/env_config.hpp"
#include "drivers/flags.hpp"
#include "plot/line_chart.hpp"
#include "plot/render.hpp"
#include "plot/timeline.hpp"
#include "sched/memory_budget.hpp"
#include "sim/async_model.hpp"
#include "sim/compare.hpp"
#include "sim/plan.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"
#include "sim/sim_timeline.hpp"
#include "sim/json_file.hpp"

namespace rrfp::cli {

namespace {

struct SimFlags {
  HintFlags hint;
  CostFlags cost;
  ProfileFlags profile;
  std::string plan;
  std::string policy = "rrfp-wait";  // the runtime's default
  int slack = 0;
  bool policy_given = false, slack_given = false;  // --plan: else the plan's own
  double latency_ms = 0, bandwidth_gbps = 0, message_mb = 0, act_mb = 1, weight_mb = 1;
  double update_ms = 0;  // each stage's optimizer update at the step's end (0: not charged)
  bool no_overlap = false, parallel_links = false;
  std::string mirror_reduce;  // as rrfp train's under mpirun; "" = overlap, or a plan's own
  std::string json, trace, picture;

  Scenario scenario() const {
    Scenario sc;
    sc.cost = cost.resolve();
    sc.mode = parse_mode(policy);
    if (slack < 0) throw SpecError("--inflight-slack must not be negative");
    sc.inflight_slack = slack;
    if (latency_ms < 0) throw SpecError(fmt::format("--latency-ms {} must not be negative", latency_ms));
    check_link_gbps(bandwidth_gbps, "--bandwidth-gbps");
    if (message_mb < 0) throw SpecError(fmt::format("--message-mb {} must not be negative", message_mb));
    if (message_mb > 0 && bandwidth_gbps == 0) throw SpecError("--message-mb needs --bandwidth-gbps > 0");
    sc.comm.latency_s = latency_ms * 1e-3;
    if (bandwidth_gbps > 0) sc.comm.bandwidth_Bps = bandwidth_gbps * 1e9 / 8;
    sc.comm.message_bytes = message_mb * 1e6;
    sc.comm.overlap = !no_overlap;
    sc.comm.serialize_links = !parallel_links;
    sc.comm.mirror_after_graph = mirror_after_graph(mirror_reduce);
    if (act_mb < 0 || weight_mb < 0)
      throw SpecError(fmt::format("{} must not be negative", act_mb < 0 ? "--act-mb" : "--weight-mb"));
    if (act_mb > 1e12 || weight_mb > 1e12)  // an exabyte: sums of them would overflow to inf
      throw SpecError(fmt::format("--act-mb {:g} / --weight-mb {:g}: at most 1e12 MB", act_mb, weight_mb));
    if (!(update_ms >= 0) || std::isinf(update_ms))
      throw SpecError(fmt::format("--update-ms {} must be a finite number >= 0", update_ms));
    if (update_ms > kMaxTaskSeconds * 1e3)
      throw SpecError(fmt::format("--update-ms {:g} is over an hour: too large", update_ms));
    return sc;
  }
};

void add_comm_flags(CLI::App* c, SimFlags& f) {
  c->add_option("--latency-ms", f.latency_ms, "per-message link latency (ms)");
  c->add_option("--bandwidth-gbps", f.bandwidth_gbps, "link bandwidth (Gbit/s); 0 = infinite");
  c->add_option("--message-mb", f.message_mb, "activation/gradient message size (MB)");
  c->add_flag("--no-overlap", f.no_overlap, "the sender waits for its transfer (no compute/comm overlap)");
  c->add_flag("--parallel-links", f.parallel_links, "transfers on one link do not queue behind each other");
  c->add_option("--mirror-reduce", f.mirror_reduce,
                "stage copies' gradient reduction (Chimera, --data-parallel), as rrfp train's under mpirun: "
                "overlap (each stage from its own last pass) or after-graph (after every pass, one stage after "
                "another); default overlap, or a plan's own");
}

// --plan: the plan's hint, stage costs, link and memory (rrfp tune), and
// its policy and slack unless given; the run shown is --seed's draw of the
// stages' spread, and the mean over the plan's seeds is what the tuner
// predicted.
void run_plan(SimFlags& f, Hint& h, Scenario& sc) {
  const Plan p = read_plan(f.plan);
  h = replicate(plan_hint(p), plan_replicas(p, f.hint.data_parallel));  // the plan's hint is one replica's
  Objective ob = plan_objective(p);
  if (!f.policy_given) f.policy = p.policy;  // what the tuner predicted under
  if (!f.slack_given) f.slack = p.inflight_slack;
  const Scenario base = f.scenario();
  ob.mode = base.mode;
  ob.inflight_slack = base.inflight_slack;
  if (!f.mirror_reduce.empty()) ob.mirror_after_graph = base.comm.mirror_after_graph;  // else the plan's
  sc = cost_scenario(p.costs, ob, base.cost.seed);
  sc.memory_budget = enforced_budget(h, p.costs, ob);  // as `rrfp train --plan` enforces the plan's limit
  const StepEstimate e = estimate_step(h, p.costs, ob);
  if (ob.memory_bytes > 0 && sc.memory_budget.empty())  // the order itself needs more: no budget could keep it
    for (int d = 0; d < h.devices(); ++d)
      if (e.memory[d] > ob.memory_bytes)
        throw SpecError(fmt::format("plan '{}': device {} needs {} (its order's activation peak, weights and "
                                    "AdamW state), over the plan's memory limit of {}",
                                    f.plan, d, mib_text(e.memory[d]), mib_text(ob.memory_bytes)));
  const int replicas = h.devices() / p.devices;
  // A device of a tensor-parallel plan is a group: its profile timed a member.
  fmt::print("plan {}: {}{} {} partition {}{}; {} (predicted when tuned: {:.3f} ms)\n", f.plan,
             replicas > 1 ? fmt::format("{} replicas of ", replicas) : "", p.placement, p.schedule,
             fmt::join(p.counts, ","),
             p.tensor_parallel > 1 ? fmt::format(", every device a group of {} tensor-parallel members", p.tensor_parallel) : "",
             e.complete ? fmt::format("mean step over {} seeds {:.3f} ms", ob.seeds, e.step_s * 1e3)
                          : fmt::format("no step completes under {}", f.policy),
             p.predicted_step_s * 1e3);
}

// A plan fixes the hint, the stage costs, the link and the memory: only
// the policy, the seed, how copies reduce and the outputs remain to
// choose (as `rrfp train --plan` refuses the flags the plan decides).
void refuse_what_the_plan_fixes(const CLI::App* c) {
  static const std::set<std::string> free = {"plan",  "policy", "inflight-slack", "seed",          "json",
                                             "trace", "png",    "svg",            "update-ms",     "data-parallel",
                                             "mirror-reduce"};
  for (const CLI::Option* o : c->get_options())
    if (o->count() > 0 && !o->get_lnames().empty() && free.count(o->get_lnames().front()) == 0)
      throw SpecError(fmt::format("--plan fixes the schedule, the stage costs and the link: drop --{}",
                                  o->get_lnames().front()));
}

// `rrfp sim --update-ms 0.2 async ...` parses --update-ms as sim's own
// flag, which the subcommand never reads: refuse it rather than drop it.
void refuse_flags_before(const CLI::App* sub) {
  for (const CLI::Option* o : sub->get_parent()->get_options()) {
    if (o->count() == 0 || o->get_lnames().empty() || o->get_lnames().front() == "help") continue;
    const std::string flag = "--" + o->get_lnames().front(), name = sub->get_name();
    throw SpecError(sub->get_option_no_throw(flag)
                        ? fmt::format("{} was given before '{}' and would be ignored: put it after 'sim {}'", flag,
                                      name, name)
                        : fmt::format("{} was given before '{}', which has no {}: it would be ignored", flag, name,
                                      flag));
  }
}

void run(SimFlags f) {
  Hint h;
  Scenario sc;
  if (!f.plan.empty()) {
    run_plan(f, h, sc);
  } else {
    h = f.hint.make();
    sc = f.scenario();
    if (f.profile.given()) {
      const StageCosts c = f.profile.costs(h.spec().stages);
      f.profile.apply(sc.cost, c, f.cost);
      sc.memory.activation_bytes = c.activation_bytes;
      sc.memory.weight_bytes = c.weight_bytes;
      sc.memory.release_at_w = true;  // as the trainer holds activations (MemoryModel)
      if (f.message_mb == 0 && f.bandwidth_gbps > 0) sc.comm.message_bytes = c.message_bytes;
    } else {
      if (!f.profile.partition.empty()) throw SpecError("--partition needs --profile FILE");
      for (int s = 0; s < h.spec().stages; ++s) {
        sc.memory.activation_bytes.push_back(f.act_mb * 1e6);
        sc.memory.weight_bytes.push_back(f.weight_mb * 1e6);
      }
    }
  }
  if (f.update_ms > 0) {  // one group, the whole step: as `sim async` charges its flushed step
    sc.update_group = h.spec().microbatches;
    sc.update_s = f.update_ms * 1e-3;
  }
  ScenarioResult r = run_scenario(h, sc);
  if (!r.sim.complete) throw SpecError(fmt::format("hint '{}' under {}: {}", h.name, f.policy, r.sim.stuck));
  nlohmann::json j = scenario_json(h, sc, r);
  if (sc.update_s > 0) j["update_s"] = sc.update_s;  // a charged step says so
  fmt::print("sim {} policy={} stages={} devices={} microbatches={} variability={} seed={}\n", h.name, f.policy,
             h.spec().stages, h.spec().devices, h.spec().microbatches, variability_label(sc.cost), sc.cost.seed);
  fmt::print("makespan {:.6f} s  lower bound {:.6f} s  ratio {:.3f}  bubble {:.4f}\n", r.sim.makespan, r.lb.bound,
             j["makespan_over_lb"].get<double>(), r.sim.bubble_ratio);
  for (int d = 0; d < h.devices(); ++d)
    fmt::print("  device {}: busy {:.6f} s  peak in-flight {}/{}  activations {:.1f} MB  weights {:.1f} MB\n", d,
               r.sim.busy[d], r.sim.peak_inflight[d], r.sim.inflight_cap[d], r.sim.peak_activation_bytes[d] / 1e6,
               r.sim.weight_bytes[d] / 1e6);
  if (!f.json.empty()) {
    write_json_file(f.json, j);
  }
  if (!f.trace.empty() || !f.picture.empty()) {
    Timeline t = to_timeline(h, r.sim, fmt::format("{} ({}, simulated)", h.name, f.policy), 1.0);
    if (!f.trace.empty()) write_chrome_trace(t, f.trace);
    if (!f.picture.empty()) render_timeline(t, f.picture);
  }
}

void add_compare(CLI::App* sim) {
  auto* c = sim->add_subcommand("compare", "Rank hints by bubble formula, idealised table and simulation, side by side");
  auto f = std::make_shared<SimFlags>();
  auto hints = std::make_shared<std::string>("gpipe,1f1b,interleaved-1f1b,zb-h1,zb-h2,zbv,chimera,hanayo,dualpipev");
  auto json = std::make_shared<std::string>();
  c->add_option("--hints", *hints, "comma-separated hints");
  c->add_option("--stages", f->hint.params.stages, "pipeline devices (p)");
  c->add_option("--microbatches", f->hint.params.microbatches, "microbatches");
  c->add_option("--chunks", f->hint.params.chunks, "chunks for interleaved-1f1b (default 2)");
  c->add_option("--waves", f->hint.params.waves, "waves for hanayo (default 1)")->check(CLI::Range(1, 64));
  add_cost_flags(c, f->cost);
  add_comm_flags(c, *f);
  c->add_option("--act-mb", f->act_mb, "activation MB per microbatch on one device (split over its stages)");
  c->add_option("--weight-mb", f->weight_mb, "weight MB of one device's share of the model");
  c->add_option("--json", *json, "write the table as JSON");
  c->callback([c, f, hints, json] {
    refuse_flags_before(c);
    std::vector<std::string> names = split_list(*hints, "--hints");
    for (std::string& n : names) n = canonical_hint_name(n);  // "interleaved": its chunks, by one name
    auto listed = [&](const char* h) { return std::find(names.begin(), names.end(), h) != names.end(); };
    // Each applies to one hint of the zoo; given without it, it would change nothing.
    if (c->count("--chunks") > 0 && !listed("interleaved-1f1b"))
      throw SpecError("--chunks applies to interleaved-1f1b, which --hints does not list");
    if (c->count("--chunks") > 0 && f->hint.params.chunks < 2)
      throw SpecError(fmt::format("hint 'interleaved-1f1b' needs --chunks v >= 2 (got {})", f->hint.params.chunks));
    if (c->count("--waves") > 0 && !listed("hanayo"))
      throw SpecError("--waves applies to hanayo, which --hints does not list");
    Scenario sc = f->scenario();
    HintParams csv = f->hint.params;  // a CSV hint takes the file's sizes unless given (docs/hints.md)
    if (c->count("--stages") == 0) csv.stages = 0;
    if (c->count("--microbatches") == 0) csv.microbatches = 0;
    if (c->count("--chunks") == 0) csv.chunks = 0;
    auto rows = compare_hints(names, f->hint.params, sc, f->act_mb * 1e6, f->weight_mb * 1e6, &csv);
    const std::string costs = sc.cost.durations ? "durations " + sc.cost.durations->source
                                                : fmt::format("cost {} unit {} ms", f->cost.cost, sc.cost.unit_ms);
    // The size the hints ran at (a lone CSV's own, else the flags').
    fmt::print("p={} m={} {}, latency {} ms, bandwidth {} Gbit/s, message {} MB\n", rows.front().devices,
               rows.front().microbatches, costs, f->latency_ms, f->bandwidth_gbps, f->message_mb);
    fmt::print("{}", format_compare(rows));
    if (!json->empty()) {
      nlohmann::json j = nlohmann::json::array();
      for (const CompareRow& r : rows)
        j.push_back({{"hint", r.hint},
                     {"model_stages", r.model_stages},
                     {"formula_bubble_ratio", r.formula ? nlohmann::json(r.formula->bubble_ratio) : nlohmann::json()},
                     {"formula_activation", r.formula ? nlohmann::json(r.formula->activation) : nlohmann::json()},
                     {"table_makespan", r.table_makespan},
                     {"table_bubble_ratio", r.table_bubble},
                     {"sim_fixed_makespan_s", r.sim_fixed_s},
                     {"sim_rrfp_makespan_s", r.sim_rrfp_s},
                     {"peak_activation_bytes", r.peak_activation},
                     {"weight_bytes", r.weight},
                     {"rank_formula", r.rank_formula},
                     {"rank_table", r.rank_table},
                     {"rank_sim", r.rank_sim}});
      write_json_file(*json, j);
    }
  });
}

// As `rrfp bench` does: STARPU_SCHED picks the policy and
// RRFP_INFLIGHT_SLACK the slack unless the flags do, so that a simulation
// predicts the run the same environment would give. A StarPU policy the
// simulator does not model is named, and the default simulated.
void adopt_environment(SimFlags& f) {
  if (!f.policy_given)
    if (const char* sched = std::getenv("STARPU_SCHED"); sched && *sched) {
      const std::string p = sched;
      if (p == "rrfp" || p == "rrfp-wait" || p == "rrfp-fixed")
        f.policy = p;
      else if (p == "static-order")  // the hint's order strictly, as rrfp-fixed
        f.policy = "rrfp-fixed";
      else
        std::fprintf(stderr, "rrfp sim: STARPU_SCHED=%s is not simulated (only rrfp, rrfp-wait, rrfp-fixed); "
                     "simulating %s\n", sched, f.policy.c_str());
    }
  if (!f.slack_given) f.slack = inflight_slack_from_env();
}

// The flag a swept parameter replaces at every point: given too, it would
// be silently overwritten.
void refuse_what_the_sweep_sets(const CLI::App* c, const std::string& param) {
  static const std::map<std::string, std::string> sets = {
      {"sigma", "--variability"},       {"bandwidth", "--bandwidth-gbps"}, {"link-ms", "--link-ms"},
      {"link-jitter", "--link-jitter"}, {"microbatches", "--microbatches"}, {"stages", "--stages"},
      {"slack", "--inflight-slack"}};
  const auto it = sets.find(param);
  if (it != sets.end() && c->count(it->second) > 0)
    throw SpecError(fmt::format("--param {} sets {} at every point: drop {}", param, it->second, it->second));
}

void add_sweep(CLI::App* sim) {
  auto* c = sim->add_subcommand("sweep", "Vary one parameter; print and plot rrfp-fixed's makespan over --policy's");
  auto f = std::make_shared<SimFlags>();
  auto param = std::make_shared<std::string>("sigma");
  auto values = std::make_shared<std::string>("0,0.2,0.4,0.6,0.8,1.0");
  auto seeds = std::make_shared<int>(5);
  add_hint_flags(c, f->hint, false);
  add_cost_flags(c, f->cost);
  add_comm_flags(c, *f);
  c->add_option("--inflight-slack", f->slack, "extra in-flight microbatches over the hint's peak")
      ->check(CLI::Range(0, 1000000));
  c->add_option("--policy", f->policy, "the policy compared with rrfp-fixed: rrfp or rrfp-wait")->capture_default_str();
  c->add_option("--param", *param, "sigma | bandwidth | link-ms | link-jitter | microbatches | stages | slack")
      ->capture_default_str();
  c->add_option("--values", *values, "comma-separated values")->capture_default_str();
  c->add_option("--seeds", *seeds, "seeds averaged per point")->capture_default_str();
  c->add_option("--png,--svg", f->picture, "plot the ratio (.png or .svg)")->check(picture_name());
  c->callback([c, f, param, values, seeds] {
    refuse_flags_before(c);
    std::vector<double> vs;
    for (const std::string& v : split_list(*values, "--values")) vs.push_back(parse_number(v, "--values"));  // "6abc" is not 6
    refuse_what_the_sweep_sets(c, *param);
    check_outputs({{"--png/--svg", f->picture}});
    f->cost.link_swept = *param == "link-ms";
    if (f->policy != "rrfp" && f->policy != "rrfp-wait")
      throw SpecError(fmt::format("sim sweep compares a policy with rrfp-fixed: --policy rrfp or rrfp-wait, not '{}'",
                                  f->policy));
    if (f->hint.data_parallel != 1)  // sweep() makes each point's hint from the name alone
      throw SpecError("sim sweep does not replicate its hint: drop --data-parallel (rrfp sim --data-parallel D "
                      "simulates one point)");
    Hint h = f->hint.make();  // validates the hint once, up front
    SimFlags base = *f;  // swept, the bandwidth of each point replaces this one
    if (*param == "bandwidth" && base.bandwidth_gbps == 0) base.bandwidth_gbps = 1;
    auto pts = sweep(f->hint.hint, f->hint.resolved(), base.scenario(), *param, vs, *seeds);
    const std::string& pol = f->policy;
    fmt::print("sweep {} over {} ({} seeds): rrfp-fixed/{} makespan\n", h.name, *param, *seeds, pol);
    fmt::print("{:>10} {:>8} {:>8} {:>8}\n", *param, "mean", "min", "max");
    Series s{"rrfp-fixed / " + pol, {}, {}};
    for (const SweepPoint& p : pts) {
      fmt::print("{:>10g} {:>8.3f} {:>8.3f} {:>8.3f}\n", p.value, p.speedup, p.min_speedup, p.max_speedup);
      s.x.push_back(p.value);
      s.y.push_back(p.speedup);
    }
    if (!f->picture.empty())
      render_line_chart(fmt::format("{}: fixed-order / readiness-first makespan", h.name), *param, "speedup", {s},
                        f->picture);
  });
}

// rrfp sim async: PACI's or AMDP's step against its synchronous
// counterpart's (sim/async_model.hpp).
void add_async(CLI::App* sim) {
  auto* c = sim->add_subcommand(
      "async", "PACI or AMDP (no flush, per-stage updates) against the same schedule flushed every step, per step");
  auto f = std::make_shared<SimFlags>();
  auto stages = std::make_shared<int>(4), accumulate = std::make_shared<int>(4), window = std::make_shared<int>(8);
  auto directions = std::make_shared<int>(2), data_parallel = std::make_shared<int>(1);
  auto method = std::make_shared<std::string>("paci");
  c->add_option("--method", *method, "paci (1F1B) or amdp (multi-directional)")->capture_default_str();
  c->add_option("--directions", *directions, "amdp: 2 (stages even) or 4 (stages divisible by 4)")
      ->capture_default_str();
  c->add_option("--stages", *stages, "pipeline stages, one a device")->capture_default_str();
  c->add_option("--accumulate", *accumulate, "microbatches per update (a step), per replica")->capture_default_str();
  c->add_option("--data-parallel", *data_parallel,
                "paci: replicas on devices of their own, each stage's copies updating together once a step")
      ->capture_default_str();
  c->add_option("--window", *window, "steps per graph")->capture_default_str();
  c->add_option("--update-ms", f->update_ms, "each stage's optimizer update (ms), run before its device's next pass")
      ->capture_default_str();
  c->add_option("--weight-mb", f->weight_mb, "weight MB per stage: what its copies reduce before each update")
      ->capture_default_str();
  add_cost_flags(c, f->cost);
  add_comm_flags(c, *f);
  c->add_option("--policy", f->policy, "rrfp, rrfp-wait or rrfp-fixed");
  c->add_option("--inflight-slack", f->slack, "extra in-flight microbatches over the hint's peak")
      ->check(CLI::Range(0, 1000000));
  c->add_option("--json", f->json, "write the estimate as JSON");
  c->callback([c, f, method, directions, data_parallel, stages, accumulate, window] {
    refuse_flags_before(c);
    if (*method != "paci" && *method != "amdp")
      throw SpecError(fmt::format("unknown --method '{}' (known: paci, amdp)", *method));
    if (*method == "paci" && c->count("--directions") > 0)
      throw SpecError("--directions is for --method amdp; PACI has one direction");
    if (*method == "amdp" && *data_parallel != 1)  // as rrfp train refuses it
      throw SpecError("--data-parallel is for --method paci: AMDP's directions are its copies of each stage");
    Scenario sc = f->scenario();
    if (sc.comm.mirror_after_graph)
      throw SpecError("sim async reduces each step's gradients before that step's update, as AMDP under mpirun "
                      "does: --mirror-reduce after-graph is a synchronous step's exchange");
    const bool amdp = *method == "amdp";
    if (*stages > 0) sc.memory.weight_bytes.assign(*stages, f->weight_mb * 1e6);  // what a step's reduction moves
    const AsyncEstimate e =
        amdp ? simulate_amdp(*stages, *directions, *accumulate, *window, sc, f->update_ms * 1e-3)
             : simulate_paci(*stages, *accumulate, *window, sc, f->update_ms * 1e-3, *data_parallel);
    const bool replicas = *data_parallel > 1;  // the hint was built: D x P devices fit an int
    const std::string order = amdp ? fmt::format("amdp-{} order", *directions)
                              : replicas ? fmt::format("1f1b x {} replicas", *data_parallel) : "1f1b";
    fmt::print("sim async {} stages={}{} accumulate={} window={} policy={} update={} ms\n", *method, *stages,
               replicas ? fmt::format(" data_parallel={} devices={}", *data_parallel, *data_parallel * *stages) : "",
               *accumulate, *window, f->policy, f->update_ms);
    fmt::print("  flush every step ({}): step {:.6f} s  bubble {:.4f}  peak in-flight {}\n", order, e.sync_step_s,
               e.sync_bubble, e.sync_peak_inflight);
    fmt::print("  no flush ({}):         step {:.6f} s  bubble {:.4f}  peak in-flight {}\n", *method, e.async_step_s,
               e.async_bubble, e.async_peak_inflight);
    fmt::print("  flushed / {} step time: {:.3f}\n", *method, e.sync_step_s / e.async_step_s);
    if (!f->json.empty()) {
      nlohmann::json j = {{"method", *method}, {"stages", *stages}, {"accumulate", *accumulate},
                          {"window", *window}, {"policy", f->policy}, {"update_s", f->update_ms * 1e-3},
                          {"sync_step_s", e.sync_step_s}, {"async_step_s", e.async_step_s},
                          {"sync_bubble", e.sync_bubble}, {"async_bubble", e.async_bubble},
                          {"sync_peak_inflight", e.sync_peak_inflight},
                          {"async_peak_inflight", e.async_peak_inflight}};
      j["link"] = {{"latency_s", sc.comm.latency_s},
                   {"bandwidth_Bps", std::isinf(sc.comm.bandwidth_Bps) ? nlohmann::json()
                                                                       : nlohmann::json(sc.comm.bandwidth_Bps)},
                   {"message_bytes", sc.comm.message_bytes},
                   {"weight_bytes", f->weight_mb * 1e6}};
      if (amdp) j["directions"] = *directions;
      if (!amdp) j["data_parallel"] = *data_parallel;
      write_json_file(f->json, j);
    }
  });
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto* c = app.add_subcommand("sim", "Simulate a hint on the synthetic workload (same core and cost model as bench)");
  auto f = std::make_shared<SimFlags>();
  add_hint_flags(c, f->hint, false);
  add_cost_flags(c, f->cost);
  add_comm_flags(c, *f);
  c->add_option("--policy", f->policy,
                "rrfp (readiness-first), rrfp-wait (bounded wait) or rrfp-fixed (strict order); default STARPU_SCHED's "
                "if it is one of them, else rrfp-wait");
  c->add_option("--inflight-slack", f->slack, "extra in-flight microbatches over the hint's peak (default RRFP_INFLIGHT_SLACK or 0)")
      ->check(CLI::Range(0, 1000000));
  c->add_option("--act-mb", f->act_mb, "activation MB held per in-flight microbatch and stage");
  c->add_option("--weight-mb", f->weight_mb, "weight MB per stage");
  c->add_option("--update-ms", f->update_ms,
                "each stage's optimizer update (ms) after its last backward, on every device holding the stage (as "
                "`sim async` charges it); default 0: not charged");
  add_profile_flags(c, f->profile);
  c->add_option("--plan", f->plan, "simulate a tuned plan (rrfp tune -o PLAN): its hint, stage costs, link and memory");
  c->add_option("--json", f->json, "write the result as JSON");
  c->add_option("--trace", f->trace, "write a Chrome/Perfetto trace");
  c->add_option("--png,--svg", f->picture, "draw the timeline (.png or .svg)")->check(picture_name());
  add_compare(c);
  add_sweep(c);
  add_async(c);
  c->require_subcommand(0, 1);
  c->callback([c, f] {
    if (!c->get_subcommands().empty()) return;
    check_outputs({{"--json", f->json}, {"--trace", f->trace}, {"--png/--svg", f->picture}});
    if (!f->plan.empty()) refuse_what_the_plan_fixes(c);
    f->policy_given = c->get_option("--policy")->count() > 0;
    f->slack_given = c->get_option("--inflight-slack")->count() > 0;
    if (f->plan.empty()) adopt_environment(*f);
    run(*f);
  });
}

}  // namespace rrfp::cli
