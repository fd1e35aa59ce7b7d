// Issue 16 at scale, by simulation: the trace-driven workloads of
// perf/traces (real mm-tiny and variable-length gpt-tiny training, each
// stage's recorded distribution resampled) at 8..128 stages with jittered
// links; rrfp-fixed / rrfp and rrfp-fixed / rrfp-wait makespan, median over
// seeds, for M = S and M = 4S microbatches and in-flight slack 0 and 4.
// Prints the table and draws the M = 4S, slack 0 lines to --png.
//   sim_at_scale --traces perf/traces --seeds 5 --png docs/img/scale.png
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "hints/generators.hpp"
#include "perf/policy_grid.hpp"
#include "plot/line_chart.hpp"
#include "sim/scenario.hpp"

using namespace rrfp;

int main(int argc, char** argv) {
  std::string traces = "perf/traces", png;
  int seeds = 5, first_seed = 2000;
  double link_ms = 1.0, jitter = 0.9;
  WaitRule wait;
  std::vector<int> stages = {8, 16, 32, 64, 128};
  CLI::App app{"fixed-order / readiness-first at 8..128 stages on trace-driven workloads (issue 16)"};
  app.add_option("--traces", traces, "directory of the recorded traces")->capture_default_str();
  app.add_option("--seeds", seeds, "seeds per point")->check(CLI::PositiveNumber);
  app.add_option("--first-seed", first_seed, "first seed");
  app.add_option("--link-ms", link_ms, "mean link delay (ms)")->capture_default_str();
  app.add_option("--link-jitter", jitter, "relative link jitter, in [0,1)")->capture_default_str();
  app.add_option("--stages", stages, "pipeline depths")->delimiter(',');
  app.add_option("--png", png, "draw the chart");
  app.add_option("--wait-ratio", wait.ratio, "rrfp-wait's ratio")->capture_default_str();
  app.add_option("--wait-horizon", wait.horizon, "rrfp-wait's horizon")->capture_default_str();
  std::vector<std::string> only;
  app.add_option("--only", only, "only these workloads (NAME:HINT)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  struct Workload {
    std::string name, hint, file;
  };
  const std::vector<Workload> work = {{"mm-tiny", "1f1b", "mm-tiny_1f1b.json"},
                                      {"mm-tiny", "zb-h1", "mm-tiny_zb-h1.json"},
                                      {"gpt-varlen", "1f1b", "gpt-tiny-varlen_1f1b.json"},
                                      {"gpt-varlen", "zb-h1", "gpt-tiny-varlen_zb-h1.json"}};
  fmt::print("link {} ms +- {:.0f}%, seeds {}..{}; medians over seeds of rrfp-fixed / policy makespan\n", link_ms,
             jitter * 100, first_seed, first_seed + seeds - 1);
  fmt::print("{:<11} {:<6} {:>6} {:>6} {:>6} {:>12} {:>12} {:>10}\n", "workload", "hint", "S", "M", "slack", "fixed/rrfp",
             "fixed/wait", "fixed/LB");
  std::vector<Series> lines;
  double best = 0;
  std::string best_at;
  try {
    for (const Workload& w : work) {
      if (!only.empty() && std::find(only.begin(), only.end(), w.name + ":" + w.hint) == only.end()) continue;
      auto t = std::make_shared<DurationTrace>(read_duration_trace(traces + "/" + w.file));
      for (int mult : {1, 4})
        for (int slack : {0, 4}) {
          Series rf{fmt::format("{} {} rrfp", w.name, w.hint), {}, {}}, wt{fmt::format("{} {} rrfp-wait", w.name, w.hint), {}, {}};
          for (int S : stages) {
            Hint h = make_hint(w.hint, {S, mult * S, 0, -1, 0});
            std::vector<double> r_rf, r_wt, over_lb;
            for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
              Scenario sc;
              sc.cost.durations = t;
              sc.cost.link_ms = link_ms;
              sc.cost.link_jitter = jitter;
              sc.cost.seed = static_cast<std::uint64_t>(seed);
              sc.inflight_slack = slack;
              sc.wait = wait;
              const Mode modes[] = {Mode::Strict, Mode::ReadinessFirst, Mode::BoundedWait};
              double ms[3];
              ScenarioResult last;
              for (int k = 0; k < 3; ++k) {
                sc.mode = modes[k];
                last = run_scenario(h, sc);
                if (!last.sim.complete) throw std::runtime_error(last.sim.stuck);
                ms[k] = last.sim.makespan;
              }
              r_rf.push_back(ms[0] / ms[1]);
              r_wt.push_back(ms[0] / ms[2]);
              over_lb.push_back(ms[0] / last.lb.bound);
            }
            const double a = perf::median(r_rf), b = perf::median(r_wt);
            fmt::print("{:<11} {:<6} {:>6} {:>6} {:>6} {:>12.3f} {:>12.3f} {:>10.3f}\n", w.name, w.hint, S, mult * S, slack,
                       a, b, perf::median(over_lb));
            std::fflush(stdout);
            if (std::max(a, b) > best) {
              best = std::max(a, b);
              best_at = fmt::format("{} {} S={} M={} slack {}", w.name, w.hint, S, mult * S, slack);
            }
            rf.x.push_back(S), rf.y.push_back(a);
            wt.x.push_back(S), wt.y.push_back(b);
          }
          if (mult == 4 && slack == 0) {
            rf.dashed = true;
            rf.color = wt.color = static_cast<int>(lines.size() / 2);
            lines.push_back(wt);
            lines.push_back(rf);
          }
        }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "sim_at_scale: {}\n", e.what());
    return 1;
  }
  fmt::print("\nlargest rrfp-fixed / readiness-first: {:.3f} at {}\n", best, best_at);
  if (!png.empty())
    render_line_chart(fmt::format("trace-driven, M = 4S, slack 0, link {} ms +- {:.0f}%", link_ms, jitter * 100),
                      "stages", "rrfp-fixed / policy makespan", lines, png, ChartOptions{true});
  return 0;
}
