#include "sim/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <type_traits>
#include <utility>

#include "hints/csv.hpp"
#include "hints/generators.hpp"
#include "sched/memory_budget.hpp"
#include "sim/json_file.hpp"
#include "sim/tuner.hpp"

namespace rrfp {

namespace {

// Each stage's costs with the blocks they were summed over, so that a
// partition edited by hand is caught instead of run with stale costs.
nlohmann::json costs_json(const StageCosts& c, const std::vector<int>& counts) {
  nlohmann::json st = nlohmann::json::array();
  for (size_t s = 0; s < c.cost.size(); ++s)
    st.push_back({{"blocks", counts.at(s)}, {"F_ms", c.cost[s].f}, {"B_ms", c.cost[s].b}, {"W_ms", c.cost[s].w}, {"BW_ms", c.cost[s].bw},
                  {"activation_bytes", c.activation_bytes[s]}, {"weight_bytes", c.weight_bytes[s]},
                  {"sigma", c.sigma.empty() ? 0.0 : c.sigma[s]}});
  return st;
}

// JSON has one number type: 4.5 microbatches is not 4, and 4294967300 is
// not 4 either (get<int> would wrap it).
int int_of(const nlohmann::json& v, const char* key, const std::string& where) {
  if (!v.is_number_integer()) throw SpecError(fmt::format("{}: '{}' must be an integer", where, key));
  const bool fits = v.is_number_unsigned()
                        ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                        : v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                              v.get<std::int64_t>() <= std::numeric_limits<int>::max();
  if (!fits) throw SpecError(fmt::format("{}: '{}' = {} is out of range", where, key, v.dump()));
  return v.get<int>();
}

template <class T>
T need(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw SpecError(fmt::format("{}: '{}' is missing", where, key));
  const nlohmann::json& v = j[key];
  if constexpr (std::is_same_v<T, int>) {
    return int_of(v, key, where);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    if (!v.is_array()) throw SpecError(fmt::format("{}: '{}' must be a list of integers", where, key));
    std::vector<int> out;
    for (const auto& x : v) out.push_back(int_of(x, key, where));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw SpecError(fmt::format("{}: '{}' has the wrong type", where, key));
    }
  }
}

// An optional number: finite and within [lo, hi], `fallback` when absent.
double number_in(const nlohmann::json& j, const char* key, double fallback, double lo, double hi,
                 const std::string& where) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw SpecError(fmt::format("{}: '{}' = {} must be a number from {} to {}", where, key, v.dump(), lo, hi));
  return v.get<double>();
}

}  // namespace

nlohmann::json plan_json(const Plan& p) {
  return {{"format", "rrfp-plan"},
          {"version", 1},
          {"model", p.model},
          {"config", p.config},
          {"micro_batch_size", p.micro_batch_size},
          {"profile", p.profile},
          {"devices", p.devices},
          {"microbatches", p.microbatches},
          {"data_parallel", p.data_parallel},
          {"tensor_parallel", p.tensor_parallel},
          {"partition", p.counts},
          {"placement", p.placement},
          {"stage_device", p.stage_device},
          {"schedule", p.schedule},
          {"policy", p.policy},
          {"inflight_slack", p.inflight_slack},
          {"hint_csv", p.csv},
          {"predicted_step_s", p.predicted_step_s},
          {"predicted_seeds", p.seeds},
          {"memory_limit_bytes", p.memory_limit_bytes},
          {"memory_bytes", p.memory_bytes},
          {"stages", costs_json(p.costs, p.counts)},
          {"message_bytes", p.costs.message_bytes},
          {"link", {{"latency_s", p.latency_s}, {"bandwidth_Bps", p.bandwidth_Bps}, {"link_ms", p.link_ms}}},
          {"mirror_reduce", p.mirror_after_graph ? "after-graph" : "overlap"},
          {"tried", p.tried}};
}

namespace {

Plan parse_plan_fields(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("format") || j["format"] != "rrfp-plan")
    throw SpecError(fmt::format("'{}' is not an rrfp plan (write one with rrfp tune -o FILE)", source));
  Plan p;
  p.source = source;
  p.model = need<std::string>(j, "model", source);
  p.config = j.value("config", nlohmann::json::object());
  p.micro_batch_size = need<int>(j, "micro_batch_size", source);
  p.profile = json_text_or(j, "profile", "", source);
  p.devices = need<int>(j, "devices", source);
  p.microbatches = need<int>(j, "microbatches", source);
  p.counts = need<std::vector<int>>(j, "partition", source);
  const int version = j.contains("version") ? int_of(j["version"], "version", source) : 1;
  if (version != 1)
    throw SpecError(fmt::format("{}: plan format version {}; this rrfp reads version 1", source, version));
  p.placement = need<std::string>(j, "placement", source);
  const std::string policy = json_text_or(j, "policy", "rrfp-wait", source);
  try {
    check_placement(p.placement, "'placement'");
    (void)parse_mode(policy);
  } catch (const SpecError& e) {
    throw SpecError(fmt::format("{}: {}", source, e.what()));
  }
  p.stage_device = need<std::vector<int>>(j, "stage_device", source);
  p.schedule = json_text_or(j, "schedule", "", source);
  p.policy = policy;
  p.inflight_slack = j.contains("inflight_slack") ? int_of(j["inflight_slack"], "inflight_slack", source) : 0;
  p.csv = bidirectional_placement(p.placement) ? json_text_or(j, "hint_csv", "", source) : need<std::string>(j, "hint_csv", source);
  constexpr double kHuge = kMaxPlanQuantity;
  p.predicted_step_s = number_in(j, "predicted_step_s", 0.0, 0, kHuge, source);
  p.data_parallel = j.contains("data_parallel") ? int_of(j["data_parallel"], "data_parallel", source) : 1;
  if (p.data_parallel < 1 || p.data_parallel > kMaxPlanReplicas)
    throw SpecError(fmt::format("{}: 'data_parallel' = {} must be a number from 1 to {}", source, p.data_parallel,
                                kMaxPlanReplicas));
  p.tensor_parallel = j.contains("tensor_parallel") ? int_of(j["tensor_parallel"], "tensor_parallel", source) : 1;
  if (p.tensor_parallel < 1 || p.tensor_parallel > kMaxTensorParallel)
    throw SpecError(fmt::format("{}: 'tensor_parallel' = {} must be a number from 1 to {}", source,
                                p.tensor_parallel, kMaxTensorParallel));
  p.seeds = j.contains("predicted_seeds") ? int_of(j["predicted_seeds"], "predicted_seeds", source) : 5;
  if (p.seeds < 1 || p.seeds > kMaxPlanSeeds)
    throw SpecError(fmt::format("{}: 'predicted_seeds' = {} must be a number from 1 to {}", source, p.seeds,
                                kMaxPlanSeeds));
  p.memory_limit_bytes = number_in(j, "memory_limit_bytes", 0.0, 0, kHuge, source);
  if (j.contains("memory_bytes")) {
    if (!j["memory_bytes"].is_array()) throw SpecError(fmt::format("{}: 'memory_bytes' must be a list of numbers", source));
    for (const auto& m : j["memory_bytes"]) {
      if (!m.is_number() || !(m.get<double>() >= 0) || m.get<double>() > kHuge)
        throw SpecError(fmt::format("{}: 'memory_bytes' holds {}, not a number from 0 to {:g}", source, m.dump(), kHuge));
      p.memory_bytes.push_back(m.get<double>());
    }
  }
  p.tried = j.value("tried", nlohmann::json::array());
  if (p.devices < 1 || p.microbatches < 1 || p.micro_batch_size < 1)
    throw SpecError(fmt::format("{}: devices, microbatches and micro_batch_size must be at least 1", source));
  if (!p.memory_bytes.empty() && p.memory_bytes.size() != static_cast<size_t>(p.devices))
    throw SpecError(fmt::format("{}: 'memory_bytes' lists {} devices, the plan has {}", source, p.memory_bytes.size(),
                                p.devices));
  if (p.inflight_slack < 0 || p.inflight_slack > kMaxPlanSlack)
    throw SpecError(fmt::format("{}: inflight_slack must be from 0 to {}", source, kMaxPlanSlack));
  if (!(p.memory_limit_bytes >= 0)) throw SpecError(fmt::format("{}: memory_limit_bytes must not be negative", source));
  // The partition covers the model's blocks, each once (what `rrfp train
  // --plan` checks against the model it builds).
  try {
    const auto layers = p.config.find("layers");
    const long long total = std::accumulate(p.counts.begin(), p.counts.end(), 0LL);
    if (total > 1000000) throw SpecError(fmt::format("the partition covers {} blocks", total));
    check_counts(p.counts, layers != p.config.end() && layers->is_number_integer()
                               ? int_of(*layers, "config.layers", source)
                               : static_cast<int>(total));
  } catch (const SpecError& e) {
    throw SpecError(fmt::format("{}: {}", source, e.what()));
  }
  const auto stages = need<nlohmann::json>(j, "stages", source);
  if (!stages.is_array())
    throw SpecError(fmt::format("{}: 'stages' = {} must be a list of stage costs", source, stages.dump().substr(0, 40)));
  if (stages.size() != p.counts.size())
    throw SpecError(fmt::format("{}: 'stages' lists {} stage costs for a partition of {} stages", source,
                                stages.size(), p.counts.size()));
  for (size_t i = 0; i < stages.size(); ++i) {
    const auto& s = stages[i];
    if (!s.is_object())
      throw SpecError(fmt::format("{}: a stage of 'stages' is {}, not an object of its costs (F_ms, B_ms, ...)",
                                  source, s.dump().substr(0, 40)));
    // Absent in plans written before it: those are taken as they are.
    if (s.contains("blocks") && int_of(s["blocks"], "blocks", source) != p.counts[i])
      throw SpecError(fmt::format(
          "{}: stage {}'s costs are of {} blocks, the partition gives it {}: the partition was edited without its "
          "costs; tune again, or predict it with rrfp sim --profile PROFILE --partition {}",
          source, i, s["blocks"].dump(), p.counts[i], fmt::join(p.counts, ",")));
    BaseCost c{need<double>(s, "F_ms", source), need<double>(s, "B_ms", source), need<double>(s, "W_ms", source),
               need<double>(s, "BW_ms", source)};
    for (double ms : {c.f, c.b, c.w, c.bw})  // a pass of over an hour is refused by the simulator too
      if (!(ms >= 0) || ms > kMaxTaskSeconds * 1e3)
        throw SpecError(fmt::format("{}: a stage's pass costs {} ms (costs are from 0 to {:g} ms)", source, ms,
                                    kMaxTaskSeconds * 1e3));
    p.costs.cost.push_back(c);
    if (!s.contains("activation_bytes") || !s.contains("weight_bytes"))
      throw SpecError(fmt::format("{}: a stage's 'activation_bytes' or 'weight_bytes' is missing", source));
    p.costs.activation_bytes.push_back(number_in(s, "activation_bytes", 0, 0, kHuge, source));
    p.costs.weight_bytes.push_back(number_in(s, "weight_bytes", 0, 0, kHuge, source));
    p.costs.sigma.push_back(number_in(s, "sigma", 0.0, 0, 5, source));  // a lognormal's spread
  }
  p.costs.message_bytes = number_in(j, "message_bytes", 0.0, 0, kHuge, source);
  const auto link = j.value("link", nlohmann::json::object());
  if (!link.is_object()) throw SpecError(fmt::format("{}: 'link' must be an object", source));
  p.latency_s = number_in(link, "latency_s", 0.0, 0, kMaxTaskSeconds, source);  // the simulator's bound
  p.bandwidth_Bps = number_in(link, "bandwidth_Bps", 0.0, 0, kHuge, source);  // 0: infinite
  p.link_ms = number_in(link, "link_ms", 0.0, 0, kMaxTaskSeconds * 1e3, source);
  const std::string mirror = json_text_or(j, "mirror_reduce", "overlap", source);  // absent: plans before it, all overlap
  if (mirror != "overlap" && mirror != "after-graph")
    throw SpecError(fmt::format("{}: 'mirror_reduce' is '{}' (overlap or after-graph)", source, mirror));
  p.mirror_after_graph = mirror == "after-graph";
  if (p.stage_device.size() != p.counts.size())
    throw SpecError(fmt::format("{}: 'stage_device' places {} stages, the partition has {}", source,
                                p.stage_device.size(), p.counts.size()));
  (void)plan_hint(p);  // the hint must agree with the rest
  return p;
}

}  // namespace

Plan parse_plan(const nlohmann::json& j, const std::string& source) {
  try {
    return parse_plan_fields(j, source);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type that no check above names
    throw SpecError(fmt::format("{}: a field has the wrong type: {}", source, json_reason(e)));
  }
}

Plan read_plan(const std::string& path) { return parse_plan(read_json_file(path, "plan"), path); }

void write_plan(const std::string& path, const Plan& p) { write_json_atomically(path, plan_json(p)); }

Hint plan_hint(const Plan& p) {
  Hint h;
  if (bidirectional_placement(p.placement)) {
    // Two copies of each stage, one per direction: PyTorch's CSV names a
    // stage by one rank, so the plan names its zoo hint ('schedule').
    if (!p.csv.empty())
      throw SpecError(fmt::format("{}: a bidirectional plan names its zoo hint in 'schedule', not in 'hint_csv'", p.source));
    if (p.schedule.empty())
      throw SpecError(fmt::format("{}: a bidirectional plan names its zoo hint in 'schedule', which is missing",
                                  p.source));
    try {
      h = make_hint(p.schedule, {p.devices, p.microbatches, 0, -1, 0});
    } catch (const SpecError& e) {
      throw SpecError(fmt::format("{}: 'schedule': {}", p.source, e.what()));
    }
    if (h.spec().pipelines() != 2)
      throw SpecError(fmt::format("{}: schedule '{}' is not bidirectional", p.source, p.schedule));
  } else {
    if (p.csv.empty())  // e.g. a bidirectional plan whose placement was edited
      throw SpecError(fmt::format("{}: a {} plan holds its order in 'hint_csv', which is empty (only a "
                                  "bidirectional placement names a zoo hint in 'schedule' instead)",
                                  p.source, p.placement));
    h = import_csv(p.csv, p.source + ": hint_csv");
  }
  const PipelineSpec& sp = h.spec();
  if (sp.devices != p.devices || sp.microbatches != p.microbatches || sp.stages != static_cast<int>(p.counts.size()))
    throw SpecError(fmt::format("{}: the hint has {} devices, {} microbatches and {} stages; the plan says {}, {} and {}",
                                p.source, sp.devices, sp.microbatches, sp.stages, p.devices, p.microbatches,
                                p.counts.size()));
  for (int s = 0; s < sp.stages; ++s)
    if (sp.placement[0][s] != p.stage_device[s])
      throw SpecError(fmt::format("{}: the hint puts stage {} on device {}, the plan on {}", p.source, s,
                                  sp.placement[0][s], p.stage_device[s]));
  h.name = p.schedule.empty() ? "plan" : "plan:" + p.schedule;
  return h;
}

Scenario cost_scenario(const StageCosts& c, const Objective& o, std::uint64_t seed) {
  Scenario sc;
  sc.cost.stage_base = c.cost;
  sc.cost.stage_sigma = c.sigma;
  sc.cost.unit_ms = 1;
  sc.cost.link_ms = o.link_ms;
  sc.cost.seed = seed;
  sc.mode = o.mode;
  sc.inflight_slack = o.inflight_slack;
  sc.comm.latency_s = o.latency_s;
  if (o.bandwidth_Bps > 0) sc.comm.bandwidth_Bps = o.bandwidth_Bps;
  sc.comm.message_bytes = c.message_bytes;
  sc.comm.mirror_after_graph = o.mirror_after_graph;
  sc.memory.activation_bytes = c.activation_bytes;
  sc.memory.weight_bytes = c.weight_bytes;
  sc.memory.release_at_w = true;  // as the trainer holds activations (MemoryModel)
  return sc;
}

namespace {

// Per device: kStateCopies x the weights of every stage copy it holds (a
// bidirectional device holds a copy per direction).
std::vector<double> state_bytes(const Hint& h, const StageCosts& c) {
  std::vector<double> b(h.devices(), 0);
  const PipelineSpec& sp = h.spec();
  std::set<std::pair<int, int>> held;  // (device, stage)
  for (int p = 0; p < sp.pipelines(); ++p)
    for (int s = 0; s < sp.stages; ++s)
      if (held.insert({sp.placement[p][s], s}).second) b[sp.placement[p][s]] += kStateCopies * c.weight_bytes[s];
  return b;
}

// Per device: the activation bytes the hint's own order holds at its peak.
std::vector<double> order_peaks(const Hint& h, const StageCosts& c) {
  const MemoryBudget probe(h, {c.activation_bytes, std::vector<double>(h.devices(), 1e300), true});
  std::vector<double> p(h.devices());
  for (int d = 0; d < h.devices(); ++d) p[d] = probe.hint_peak(d);
  return p;
}

// `limit` less the state, or empty where the order's own peak does not fit.
std::vector<double> budget_within(double limit, const std::vector<double>& state, const std::vector<double>& peak) {
  std::vector<double> b(state.size());
  for (size_t d = 0; d < b.size(); ++d) {
    b[d] = limit - state[d];
    if (peak[d] > b[d]) return {};
  }
  return b;
}

}  // namespace

std::vector<double> activation_budget(const Hint& h, const StageCosts& c, double limit) {
  std::vector<double> b = state_bytes(h, c);
  for (double& x : b) x = limit - x;
  return b;
}

std::vector<double> enforced_budget(const Hint& h, const StageCosts& c, const Objective& o) {
  if (o.memory_bytes <= 0) return {};
  return budget_within(o.memory_bytes, state_bytes(h, c), order_peaks(h, c));
}

StepEstimate estimate_step(const Hint& h, const StageCosts& c, const Objective& o) {
  if (o.seeds < 1) throw SpecError("the prediction needs at least one seed");
  StepEstimate e;
  const int D = h.devices();
  e.memory.assign(D, 0);
  e.busy_s.assign(D, 0);
  // A limit is enforced, as `rrfp train --plan` does, where the hint's own
  // order fits it; where it does not, the plan cannot run within the limit.
  // Either way its memory is at least what that order holds.
  std::vector<double> budget;
  if (o.memory_bytes > 0) {
    const std::vector<double> state = state_bytes(h, c), peak = order_peaks(h, c);
    budget = budget_within(o.memory_bytes, state, peak);
    for (int d = 0; d < D; ++d) e.memory[d] = peak[d] + state[d];
  }
  for (int seed = 1; seed <= o.seeds; ++seed) {
    Scenario sc = cost_scenario(c, o, static_cast<std::uint64_t>(seed));
    sc.memory_budget = budget;
    const ScenarioResult r = run_scenario(h, sc);
    if (!r.sim.complete) {
      e.stuck = r.sim.stuck;
      return e;
    }
    e.step_s += r.sim.makespan / o.seeds;
    for (int d = 0; d < D; ++d) {
      e.memory[d] = std::max(e.memory[d], r.sim.peak_activation_bytes[d] + kStateCopies * r.sim.weight_bytes[d]);
      e.busy_s[d] += r.sim.busy[d] / o.seeds;
    }
  }
  e.complete = true;
  return e;
}

namespace {

// A degree the plan was tuned for, under a flag whose default 1 means "the
// plan's": the plan's, or the flag's where the plan has none above 1.
// `unit` names one of what the flag counts, `tuned` the plan's degree.
int adopt_degree(const Plan& p, int planned, int requested, const char* flag, const char* unit,
                 const std::string& tuned) {
  if (requested < 1) throw SpecError(fmt::format("{} must be at least 1 {}, got {}", flag, unit, requested));
  if (requested == 1 || requested == planned) return planned;
  if (planned == 1) return requested;
  throw SpecError(fmt::format("plan '{}' was tuned for {}; {} {} differs (drop it to run the plan's)", p.source, tuned,
                              flag, requested));
}

}  // namespace

int plan_replicas(const Plan& p, int requested) {
  return adopt_degree(p, p.data_parallel, requested, "--data-parallel", "replica",
                      fmt::format("{} data-parallel replicas", p.data_parallel));
}

int plan_members(const Plan& p, int requested) {
  return adopt_degree(p, p.tensor_parallel, requested, "--tensor-parallel", "member",
                      fmt::format("tensor-parallel groups of {}", p.tensor_parallel));
}

Objective plan_objective(const Plan& p) {
  Objective o;
  o.mode = parse_mode(p.policy);
  o.inflight_slack = p.inflight_slack;
  o.latency_s = p.latency_s;
  o.mirror_after_graph = p.mirror_after_graph;
  o.bandwidth_Bps = p.bandwidth_Bps;
  o.link_ms = p.link_ms;
  o.seeds = p.seeds;
  o.memory_bytes = p.memory_limit_bytes;
  return o;
}

}  // namespace rrfp
