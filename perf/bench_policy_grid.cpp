// rrfp-fixed vs rrfp vs rrfp-wait over the grid of perf/policy_grid.hpp.
// For each cell and seed all policies face the same drawn durations, back to
// back (interleaved); per cell we print the median over seeds of the ratios
// fixed/policy and the mean of policy/lower bound, then the summary that
// issue 16 asks for. --backend sim runs the simulator (the shared arbiter),
// --backend starpu the real runtime (rrfp bench's code path). The order of
// the policies rotates from seed to seed, so no policy always runs first.
// --null adds rrfp-fixed a second time: its column, fixed/fixed, is what
// the noise alone does to a cell's median (an A/A comparison).
//   bench_policy_grid --backend sim --seeds 20 --first-seed 1000
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hints/generators.hpp"
#include "perf/policy_grid.hpp"
#include "runtime/bench.hpp"
#include "sim/scenario.hpp"

using namespace rrfp;
using namespace rrfp::perf;

namespace {

struct Options {
  std::string backend = "sim";
  int seeds = 10, first_seed = 1000, stages = 4, microbatches = 16;
  double unit_ms = 2;
  std::vector<double> wait_ratios = {kDefaultWaitRatio};
  std::vector<double> wait_horizons = {kDefaultWaitHorizon};
  std::vector<std::string> hints, variability;
  std::vector<int> slacks;
  std::string traces;  // directory of the trace-driven columns; "" = none
  bool null_column = false;
};

struct Policy {
  std::string name;  // rrfp-fixed, rrfp, rrfp-wait
  WaitRule wait{};
  bool again = false;  // the A/A column: rrfp-fixed run a second time
  std::string label() const {
    if (again) return "fixed-again";
    if (name != "rrfp-wait") return name;
    return wait.horizon == kDefaultWaitHorizon ? fmt::format("wait{}", wait.ratio)
                                               : fmt::format("wait{}h{}", wait.ratio, wait.horizon);
  }
};

struct Run {
  double makespan, lower_bound;
};

Run run_one(const Options& o, const Hint& h, const GridVariability& v, int slack, int seed, const Policy& p) {
  const bool split = h.spec().split_backward;
  if (o.backend == "sim") {
    Scenario sc;
    sc.cost = grid_cost(v, split, seed, o.unit_ms);
    sc.mode = parse_mode(p.name);
    sc.inflight_slack = slack;
    sc.wait = p.wait;
    ScenarioResult r = run_scenario(h, sc);
    if (!r.sim.complete) throw ExecError(fmt::format("{} did not complete:\n{}", h.name, r.sim.stuck));
    return {r.sim.makespan, r.lb.bound};
  }
  BenchConfig cfg;
  cfg.cost = grid_cost(v, split, seed, o.unit_ms);
  cfg.exec.inflight_slack = slack;
  cfg.exec.policy = p.name;
  cfg.exec.wait = p.wait;
  BenchReport r = run_bench(h, cfg);
  return {r.makespan_s, r.lower_bound_s};
}

template <class T>
bool selected(const std::vector<T>& filter, const T& x) {
  return filter.empty() || std::find(filter.begin(), filter.end(), x) != filter.end();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"rrfp-fixed vs rrfp vs rrfp-wait over hints x variability x slack (issue 16)"};
  app.add_option("--backend", o.backend, "sim (the simulator) or starpu (the runtime)")->check(CLI::IsMember({"sim", "starpu"}));
  app.add_option("--seeds", o.seeds, "seeds per cell")->check(CLI::PositiveNumber);
  app.add_option("--first-seed", o.first_seed, "first seed (held-out seeds: not those the rule was tuned on)");
  app.add_option("--stages", o.stages, "pipeline devices")->check(CLI::PositiveNumber);
  app.add_option("--microbatches", o.microbatches, "microbatches (a multiple of --stages)")->check(CLI::PositiveNumber);
  app.add_option("--unit-ms", o.unit_ms, "one cost unit in ms (F=B=W=1)")->check(CLI::PositiveNumber);
  app.add_option("--wait-ratio", o.wait_ratios, "rrfp-wait ratios to compare (comma-separated)")->delimiter(',');
  app.add_option("--wait-horizon", o.wait_horizons, "rrfp-wait horizons to compare (comma-separated; each with each ratio)")
      ->delimiter(',');
  app.add_option("--hints", o.hints, "only these hints")->delimiter(',');
  app.add_option("--variability", o.variability, "only these variability columns")->delimiter(',');
  app.add_option("--slacks", o.slacks, "only these slacks")->delimiter(',');
  app.add_option("--traces", o.traces, "add the trace-driven columns from this directory (perf/traces)");
  app.add_flag("--null", o.null_column, "also run rrfp-fixed a second time: the fixed/fixed-again column is the noise");
  CLI11_PARSE(app, argc, argv);

  std::vector<Policy> pol = {{"rrfp-fixed"}, {"rrfp"}};
  for (double r : o.wait_ratios)
    for (double hz : o.wait_horizons) pol.push_back({"rrfp-wait", {r, hz}});
  if (o.null_column) pol.push_back({"rrfp-fixed", {}, true});
  fmt::print("backend {}, {} stages, {} microbatches, unit {} ms, seeds {}..{}; per cell: median over seeds of "
             "fixed/policy, mean of policy/LB\n",
             o.backend, o.stages, o.microbatches, o.unit_ms, o.first_seed, o.first_seed + o.seeds - 1);
  std::string head = fmt::format("{:<17} {:<14} {:>5}", "hint", "variability", "slack");
  for (size_t k = 1; k < pol.size(); ++k) head += fmt::format(" {:>13}", "fixed/" + pol[k].label());
  for (const Policy& p : pol) head += fmt::format(" {:>12}", p.label() + "/LB");
  fmt::print("{}\n", head);

  const size_t P = pol.size();
  std::vector<double> worst(P, 1e9), var_sum(P, 0), slack4_lb(P, 0);
  std::vector<int> below(P, 0);  // cells whose median is under 0.99
  int var_cells = 0, slack4_cells = 0;
  try {
    for (const std::string& hn : grid_hints()) {
      if (!selected(o.hints, hn)) continue;
      Hint h = grid_hint(hn, o.stages, o.microbatches);
      std::vector<GridVariability> columns = grid_variability();
      for (const GridVariability& t : grid_trace_columns(o.traces)) columns.push_back(t);
      for (const GridVariability& v : columns) {
        if (!selected(o.variability, v.name)) continue;
        for (int slack : grid_slacks()) {
          if (!selected(o.slacks, slack)) continue;
          std::vector<std::vector<double>> ratio(P);
          std::vector<double> over_lb(P, 0);
          for (int seed = o.first_seed; seed < o.first_seed + o.seeds; ++seed) {
            std::vector<Run> runs(P);
            for (size_t i = 0; i < P; ++i) {
              const size_t k = (i + static_cast<size_t>(seed - o.first_seed)) % P;
              runs[k] = run_one(o, h, v, slack, seed, pol[k]);
            }
            for (size_t k = 0; k < P; ++k) {
              ratio[k].push_back(runs[0].makespan / runs[k].makespan);
              over_lb[k] += runs[k].makespan / runs[k].lower_bound / o.seeds;
            }
          }
          std::string line = fmt::format("{:<17} {:<14} {:>5}", hn, v.name, slack);
          for (size_t k = 1; k < P; ++k) {
            const double m = median(ratio[k]);
            line += fmt::format(" {:>13.3f}", m);
            worst[k] = std::min(worst[k], m);
            if (m < 0.99) ++below[k];
            if (v.name != "none") var_sum[k] += m;
          }
          for (size_t k = 0; k < P; ++k) {
            line += fmt::format(" {:>12.3f}", over_lb[k]);
            if (slack == 4) slack4_lb[k] += over_lb[k];
          }
          if (v.name != "none") ++var_cells;
          if (slack == 4) ++slack4_cells;
          fmt::print("{}\n", line);
          std::fflush(stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_policy_grid: {}\n", e.what());
    return 1;
  }
  fmt::print("\nsummary (goal: worst cell median >= 0.99, mean over variable cells >= 1.15, slack 4 policy/LB <= 1.05)\n");
  for (size_t k = 1; k < P; ++k)
    fmt::print("  {:<12} worst cell {:.3f}  cells below 0.99 {}  mean over {} variable cells {:.3f}  "
               "slack-4 mean policy/LB {:.3f}\n",
               pol[k].label(), worst[k], below[k], var_cells, var_cells ? var_sum[k] / var_cells : 0,
               slack4_cells ? slack4_lb[k] / slack4_cells : 0);
  return 0;
}
