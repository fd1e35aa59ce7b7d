// rrfp hints: list, show (table|csv|json), validate, export.
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "drivers/commands.hpp"
#include "drivers/flags.hpp"
#include "hints/csv.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "hints/validate.hpp"

namespace rrfp::cli {

namespace {

// Same flags as bench, sim and train (drivers/flags.hpp), plus the output format.
struct HintArgs : HintFlags {
  std::string format = "table";
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
  nlohmann::ordered_json order = nlohmann::ordered_json::array();
  for (int d = 0; d < h.devices(); ++d) order.push_back(csv_cells(h, d));
  j["order"] = order;
  j["complete"] = r.complete;
  j["makespan"] = r.makespan;
  j["bubble_ratio"] = r.bubble_ratio;
  j["peak_inflight"] = r.peak_inflight;
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
}

void show(HintArgs& a) {
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
  add_hint_flags(sh, *sa);
  sh->add_option("--format", sa->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  sh->callback([sa] { show(*sa); });

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
