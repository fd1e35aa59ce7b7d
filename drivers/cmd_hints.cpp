// rrfp hints: list, show (table|csv|json), validate, export.
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "drivers/commands.hpp"
#include "drivers/flags.hpp"
#include "hints/csv.hpp"
#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "hints/replicate.hpp"
#include "hints/validate.hpp"
#include "sim/simulator.hpp"

namespace rrfp::cli {

namespace {

// Same flags as bench, sim and train (drivers/flags.hpp), plus the output format.
struct HintArgs : HintFlags {
  std::string format = "table";
  // --async: a window of an asynchronous method (docs/async.md) instead of a zoo hint.
  std::string async;
  int accumulate = 4, window = 3, directions = 2;
};

nlohmann::ordered_json to_json(const Hint& h, const ReplayResult& r) {
  const PipelineSpec& sp = h.spec();
  nlohmann::ordered_json j;
  j["hint"] = h.name;
  j["stages"] = sp.stages;
  j["devices"] = sp.devices;
  j["microbatches"] = sp.microbatches;
  j["split_backward"] = sp.is_split(0, 0) && !sp.mixed_backward();
  j["backward"] = backward_form(sp);
  j["placement"] = sp.placement[0];
  if (sp.pipelines() > 1) j["placements"] = sp.placement;
  j["placement_kind"] = sp.placement_name;
  // Cells exactly as the CSV writes them, overlap groups included.
  j["order"] = csv_rows(h);
  j["complete"] = r.complete;
  j["makespan"] = r.makespan;
  j["bubble_ratio"] = r.bubble_ratio;
  j["peak_inflight"] = r.peak_inflight;
  j["peak_held"] = r.peak_held;
  return j;
}

void print_table(const Hint& h, const ReplayResult& r) {
  const PipelineSpec& sp = h.spec();
  fmt::print("hint {}: {} stages on {} devices ({}), {} microbatches, {} backward\n", h.name, sp.stages, sp.devices,
             sp.placement_name, sp.microbatches, backward_form(sp));
  fmt::print("{}", timeline_grid(h, r));
  fmt::print("makespan {}  bubble ratio {:.4f}  (unit costs: F=1, B=W=1 split, BW=2 fused; strict order)\n",
             r.makespan, r.bubble_ratio);
  fmt::print("peak in-flight per device:");
  for (size_t d = 0; d < r.peak_inflight.size(); ++d) fmt::print(" dev{}={}", d, r.peak_inflight[d]);
  fmt::print("\n");
  // Split backward: W still reads what F saved, so memory lasts until W.
  if (sp.split_backward) {
    fmt::print("peak held until W per device:");
    for (size_t d = 0; d < r.peak_held.size(); ++d) fmt::print(" dev{}={}", d, r.peak_held[d]);
    fmt::print("\n");
  }
}

// The window's order run strictly in unit time with the method's update
// rules (the simulator's SimOptions::update_group / gate_lag), which a plain
// replay of the order would ignore: the steady state without a flush.
void show_async(const HintArgs& a) {
  if (a.async != "paci" && a.async != "amdp")
    throw SpecError(fmt::format("unknown --async '{}' (known: paci, amdp)", a.async));
  if (a.accumulate < 1 || a.window < 1) throw SpecError("--accumulate and --window must be at least 1");
  const bool amdp = a.async == "amdp";
  const int P = a.params.stages;
  // PACI with --data-parallel D: D copies of the window, each taking
  // --accumulate of every step's microbatches (as rrfp train runs it).
  Hint h = amdp ? amdp_hint(P, a.directions, a.accumulate, a.window)
                : replicate(make_hint("1f1b", {P, grouped_microbatches(a.accumulate, a.window), 0, 0, 0}),
                            a.data_parallel, a.accumulate);
  h.name = amdp ? fmt::format("amdp-{}", a.directions)
                : a.data_parallel > 1 ? fmt::format("paci-dp{}", a.data_parallel) : "paci";
  if (a.format == "csv") {
    fmt::print("{}", export_csv(h));
    return;
  }
  SimOptions so;
  so.mode = Mode::Strict;
  so.duration = [&h](int id) { return unit_cost(h.graph->task(id).kind); };
  so.update_group = a.accumulate * a.data_parallel;  // every copy's backwards of a step
  so.gate_lag = amdp ? 2 : 0;
  const SimResult s = simulate(h, so);
  ReplayResult r;
  r.complete = s.complete;
  r.makespan = s.makespan;
  r.bubble_ratio = s.bubble_ratio;
  r.start = s.start;
  r.end = s.end;
  r.busy = s.busy;
  r.peak_inflight = s.peak_inflight;
  r.stuck = s.stuck;
  if (a.format == "json") {
    nlohmann::ordered_json j = to_json(h, r);
    j["async"] = {{"method", a.async}, {"accumulate", a.accumulate}, {"window_steps", a.window}};
    if (a.data_parallel > 1) j["async"]["data_parallel"] = a.data_parallel;
    if (amdp) j["async"]["directions"] = a.directions;
    fmt::print("{}\n", j.dump(2));
  } else {
    print_table(h, r);
    const int step_mbs = a.accumulate * a.data_parallel;
    fmt::print("{} steps of {} microbatches{}, no flush between them; each stage updates after every {} of its "
               "backwards{}{}\n",
               a.window, step_mbs,
               a.data_parallel > 1 ? fmt::format(" ({} per replica)", a.accumulate) : "", step_mbs,
               a.data_parallel > 1 ? " (every copy's)" : "",
               amdp ? ", and a forward of step k waits for its stage's update of step k-2" : "");
  }
  if (!r.complete) throw SpecError(fmt::format("'{}' does not complete: {}", h.name, r.stuck));
}

void show(HintArgs& a) {
  if (!a.async.empty()) return show_async(a);
  Hint h = a.make();
  if (a.format == "csv") {
    fmt::print("{}", export_csv(h));
    return;
  }
  ReplayResult r = replay_unit(h);
  if (a.format == "json") fmt::print("{}\n", to_json(h, r).dump(2));
  else print_table(h, r);
  if (!r.complete) throw SpecError(fmt::format("hint '{}' deadlocks: {}", h.name, r.stuck));
}

void validate_file(const std::string& path) {
  Hint h = import_csv_file(path);
  ValidationReport v = validate_hint(h);
  fmt::print("file: {}\n", path);
  fmt::print("ranks: {}\nstages: {}\n", v.ranks, v.stages);
  fmt::print("placement: {} (stage -> rank: {})\n", v.placement_name, fmt::join(v.placement, " "));
  for (int d = 0; d < v.ranks; ++d) fmt::print("  rank {}: stages {}\n", d, fmt::join(h.spec().stages_on(d), " "));
  fmt::print("microbatches: {}\n", v.microbatches);
  fmt::print("backward: {}\n", v.backward);
  fmt::print("makespan: {} (unit costs, strict order), bubble ratio {:.4f}\n", v.replay.makespan,
             v.replay.bubble_ratio);
  fmt::print("peak in-flight per rank: {}\n", fmt::join(v.replay.peak_inflight, " "));
  if (h.spec().split_backward) fmt::print("peak held until W per rank: {}\n", fmt::join(v.replay.peak_held, " "));
  fmt::print("valid\n");
}

}  // namespace

void add_hints_command(CLI::App& app) {
  auto* hints = app.add_subcommand("hints", "Schedule hints: list, show, validate, export");
  hints->require_subcommand(1);

  auto* list = hints->add_subcommand("list", "Every hint with one line saying what it is");
  list->callback([] {
    for (const HintInfo& h : hint_registry()) {
      std::string names = h.name;
      for (const std::string& al : h.aliases) names += " (" + al + ")";
      fmt::print("{:<28} {}\n", names, h.description);
    }
    fmt::print("{:<28} {}\n", "csv:PATH", "a PyTorch compute-only schedule CSV file");
  });

  auto sa = std::make_shared<HintArgs>();
  auto* sh = hints->add_subcommand("show", "Order per device, unit-cost timeline, makespan, bubble, peak in-flight");
  add_hint_flags(sh, *sa, false);
  sh->get_option("--hint")->default_str("");  // required unless --async: no default to show
  sh->add_option("--format", sa->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  sh->add_option("--async", sa->async,
                 "instead of --hint: a window of paci or amdp without a flush, with its update rules (docs/async.md)");
  sh->add_option("--accumulate", sa->accumulate, "--async: microbatches per step (per update)")->capture_default_str();
  sh->add_option("--window", sa->window, "--async: steps drawn")->capture_default_str();
  sh->add_option("--directions", sa->directions, "--async amdp: 2 or 4")->capture_default_str();
  sh->callback([sa, sh] {
    if (sa->async.empty() && sh->count("--hint") == 0) throw SpecError("--hint is required (or --async METHOD)");
    if (!sa->async.empty() && sh->count("--hint") > 0) throw SpecError("--async draws its own order: drop --hint");
    // Flags of the other form are refused, not ignored.
    if (!sa->async.empty()) {
      for (const char* name : {"--microbatches", "--chunks", "--waves", "--split", "--fused"})
        if (sh->count(name) > 0)
          throw SpecError(fmt::format("--async draws its own order: drop {} (the window has --accumulate x --window "
                                      "microbatches)", name));
      if (sa->async == "amdp" && sh->count("--data-parallel") > 0)
        throw SpecError("--async amdp places its own stages (its directions are its copies): drop --data-parallel");
      if (sa->async == "paci" && sh->count("--directions") > 0)
        throw SpecError("--directions is for --async amdp; PACI has one direction");
    } else {
      for (const char* name : {"--accumulate", "--window", "--directions"})
        if (sh->count(name) > 0) throw SpecError(fmt::format("{} needs --async paci|amdp", name));
    }
    show(*sa);
  });

  auto path = std::make_shared<std::string>();
  auto* va = hints->add_subcommand("validate", "Check a PyTorch CSV schedule: structure and strict executability");
  va->add_option("file", *path, "CSV file")->required();
  va->callback([path] { validate_file(*path); });

  auto ea = std::make_shared<HintArgs>();
  auto* ex = hints->add_subcommand("export", "Write a hint as PyTorch-compatible CSV to stdout");
  add_hint_flags(ex, *ea);
  ex->callback([ea] { fmt::print("{}", export_csv(ea->make())); });
}

}  // namespace rrfp::cli
