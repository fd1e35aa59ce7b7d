// rrfp hints: list, show (table|csv|json), validate, export.
#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"

namespace rrfp::cli {

void add_hints_command(CLI::App& app) {
  auto* hints = app.add_subcommand("hints", "Schedule hints: list, show, validate, export");
  hints->require_subcommand(1);
  auto* list = hints->add_subcommand("list", "Every hint with one line saying what it is");
  list->callback([] {
    for (const HintInfo& h : hint_registry()) fmt::print("{:<18} {}\n", h.name, h.description);
  });
  auto p = std::make_shared<HintParams>();
  auto name = std::make_shared<std::string>("1f1b");
  auto* show = hints->add_subcommand("show", "Order per device and its unit-cost timeline");
  show->add_option("--hint", *name, "hint name or csv:PATH")->required();
  show->add_option("--stages", p->stages, "pipeline devices")->check(CLI::PositiveNumber);
  show->add_option("--microbatches", p->microbatches, "microbatches")->check(CLI::PositiveNumber);
  show->callback([p, name] {
    Hint h = make_hint(*name, *p);
    ReplayResult r = replay_unit(h);
    fmt::print("{}", timeline_grid(h, r));
    fmt::print("makespan {} bubble {:.4f}\n", r.makespan, r.bubble_ratio);
  });
}

}  // namespace rrfp::cli
