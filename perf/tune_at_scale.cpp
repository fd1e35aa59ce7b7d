// rrfp tune at 4, 8, 16 (any) devices from one profile, in simulation: the
// tuned plan's predicted step against the best zoo hint on the even
// partition rrfp train uses (each hint at its own model-stage count), and
// how long the search took (perf/RESULTS.md, issue 15). --data-parallel:
// the tuner also searches the pipeline x data-parallel split (every degree
// dividing the devices and microbatches); --bandwidth-gbps: the link the
// replicas all-reduce over (and activations cross), infinite by default.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <limits>

#include "hints/generators.hpp"
#include "sim/scenario.hpp"
#include "sim/tuner.hpp"

using namespace rrfp;

int main(int argc, char** argv) {
  CLI::App app{"Tuned plan vs the best even-partition zoo hint, simulated at several device counts"};
  std::string profile, policy = "rrfp-wait";
  std::vector<int> devices = {4, 8, 16};
  int mb_per_device = 2;
  bool data_parallel = false;
  double gbps = 0;
  app.add_option("--profile", profile, "rrfp profile -o FILE")->required();
  app.add_option("--devices", devices, "device counts")->delimiter(',');
  app.add_option("--microbatches-per-device", mb_per_device, "microbatches = this x devices")->capture_default_str();
  app.add_option("--policy", policy, "simulated policy")->capture_default_str();
  app.add_flag("--data-parallel", data_parallel, "also search data-parallel degrees (rrfp tune --data-parallel auto)");
  app.add_option("--bandwidth-gbps", gbps, "link bandwidth, Gbit/s (0 = infinite)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const ModelProfile p = read_profile(profile);
    const Mode mode = parse_mode(policy);
    fmt::print("profile {} ({} blocks), policy {}, microbatches = {} x devices, link {}{}\n", profile, p.blocks(),
               policy, mb_per_device, gbps > 0 ? fmt::format("{} Gbit/s", gbps) : "infinite",
               data_parallel ? ", data-parallel degrees searched" : "");
    fmt::print("{:>7} {:>12} {:>26} {:>12} {:>8} {:>9}  plan\n", "devices", "tuned ms", "best even hint", "even ms",
               "ratio", "search s");
    for (int D : devices) {
      const int M = mb_per_device * D;
      TuneOptions o;
      o.devices = D;
      o.microbatches = M;
      o.objective.mode = mode;
      o.objective.bandwidth_Bps = gbps * 1e9 / 8;
      if (data_parallel) o.data_parallel = data_parallel_degrees(D, M);
      const auto t0 = std::chrono::steady_clock::now();
      const Plan plan = tune(p, o);
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string best = "none";
      double best_s = std::numeric_limits<double>::infinity();
      for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zbv", "chimera", "chimera-asym"}) {
        HintParams hp;
        hp.stages = D;
        hp.microbatches = M;
        hp.chunks = std::string(name) == "interleaved-1f1b" ? 2 : 0;
        try {
          const StepEstimate e = estimate_even(p, make_hint(name, hp), o.objective);
          if (e.complete && e.step_s < best_s) best_s = e.step_s, best = name;
        } catch (const SpecError&) {
          // More model stages than blocks: this hint cannot run here.
        }
      }
      fmt::print("{:>7} {:>12.3f} {:>26} {:>12.3f} {:>8.3f} {:>9.2f}  {}{} {} {}\n", D, plan.predicted_step_s * 1e3, best,
                 best_s * 1e3, best_s / plan.predicted_step_s, took,
                 plan.data_parallel > 1 ? fmt::format("{} x ", plan.data_parallel) : "", plan.placement,
                 plan.schedule, fmt::join(plan.counts, ","));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
