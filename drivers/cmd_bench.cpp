// rrfp bench: a hint's task graph on real StarPU workers with synthetic,
// seeded task costs; the policy comes from STARPU_SCHED (default rrfp).
#include <fstream>

#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "runtime/bench.hpp"
#include "runtime/mpi_executor.hpp"
#include "runtime/mpi_session.hpp"
#include "runtime/session.hpp"

namespace rrfp::cli {

namespace {

struct BenchArgs {
  std::string hint = "bfw", cost, variability = "none", json, trace, policy;
  HintParams params;
  double unit_ms = 1, link_ms = 0, link_jitter = 0;
  std::uint64_t seed = 1;
  int slack = -1, iterations = 1, split = -1;
  int devices_per_rank = 1;  // under mpirun/srun (docs/mpi.md)
};

void run(const BenchArgs& a) {
  if (a.params.microbatches < 1) throw SpecError("--microbatches must be at least 1 (got 0)");
  if (a.params.stages < 1) throw SpecError("--stages must be at least 1");
  const bool mpi = mpi_launched();  // devices spread over ranks: see docs/mpi.md
  if (!mpi && a.params.stages > max_cpu_workers())
    throw SpecError(fmt::format("--stages {}: one StarPU CPU worker per device and at most {} here", a.params.stages,
                                max_cpu_workers()));
  BenchConfig cfg;
  cfg.hint = a.hint;
  cfg.params = a.params;
  cfg.params.split = a.split;
  cfg.cost.base = parse_cost(a.cost);
  cfg.cost.unit_ms = a.unit_ms;
  cfg.cost.var = parse_variability(a.variability);
  cfg.cost.link_ms = a.link_ms;
  cfg.cost.link_jitter = a.link_jitter;
  cfg.cost.seed = a.seed;
  validate(cfg.cost);
  cfg.exec.policy = a.policy;
  cfg.exec.inflight_slack = a.slack >= 0 ? a.slack : inflight_slack_from_env(0);
  cfg.exec.profile = !a.trace.empty();
  cfg.iterations = a.iterations;
  Hint hint = make_hint(a.hint, cfg.params);
  if (mpi) cfg.executor = mpi_executor(MpiOptions{a.devices_per_rank, {}});
  BenchReport r = run_bench(hint, cfg);
  if (mpi && mpi_world().rank != 0) return;  // every rank has the merged run; rank 0 reports
  fmt::print("policy {}  hint {}  {} stages on {} devices  {} microbatches  {} tasks  variability {}  seed {}\n", r.policy,
             r.hint, r.stages, r.devices, r.microbatches, r.tasks, r.variability, r.seed);
  fmt::print("makespan {:.4f} s  lower bound {:.4f} s  ratio {:.3f}  bubble {:.3f}  ({} iteration{})\n", r.makespan_s,
             r.lower_bound_s, r.makespan_over_lb, r.bubble_ratio, r.iterations, r.iterations > 1 ? "s" : "");
  for (int d = 0; d < r.devices; ++d)
    fmt::print("  device {}: busy {:.4f} s  peak in-flight {} (cap {})\n", d, r.busy_s[d], r.peak_inflight[d],
               r.inflight_cap[d]);
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    if (!(out << to_json(r).dump(2) << "\n")) throw SpecError(fmt::format("cannot write '{}'", a.json));
  }
  if (!a.trace.empty())
    write_chrome_trace(to_timeline(hint, r.last, fmt::format("rrfp bench {} {}", r.policy, r.hint)), a.trace);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  a->params.stages = 4;
  a->params.microbatches = 8;
  auto* cmd = app.add_subcommand("bench", "Run a hint's task graph on StarPU workers with synthetic seeded costs "
                                          "(policy: STARPU_SCHED, default rrfp)");
  cmd->add_option("--hint", a->hint, "hint name or csv:PATH")->capture_default_str();
  cmd->add_option("--stages", a->params.stages, "pipeline devices (StarPU CPU workers, at most 4)")->capture_default_str();
  cmd->add_option("--microbatches", a->params.microbatches, "microbatches")->capture_default_str();
  cmd->add_option("--chunks", a->params.chunks, "model stages per device (interleaved hints)");
  cmd->add_option("--split", a->split, "-1 hint default, 0 fused BW, 1 split B+W");
  cmd->add_option("--cost", a->cost, "base cost per kind in units, e.g. F=1,B=1,W=1 or F=1,BW=2");
  cmd->add_option("--unit-ms", a->unit_ms, "milliseconds per cost unit")->capture_default_str();
  cmd->add_option("--variability", a->variability,
                  "none | lognormal:SIGMA | straggler:STAGE:FACTOR:PROB | multimodal:SIGMA")->capture_default_str();
  cmd->add_option("--link-ms", a->link_ms, "transfer delay between devices (ms)");
  cmd->add_option("--link-jitter", a->link_jitter, "relative jitter of the transfer delay, in [0,1)");
  cmd->add_option("--seed", a->seed, "seed of the drawn durations")->capture_default_str();
  cmd->add_option("--inflight-slack", a->slack, "raise the in-flight cap by K (default RRFP_INFLIGHT_SLACK or 0)");
  cmd->add_option("--iterations", a->iterations, "iterations (iteration i uses seed+i)")->capture_default_str();
  cmd->add_option("--policy", a->policy, "override STARPU_SCHED");
  cmd->add_option("--devices-per-rank", a->devices_per_rank, "under mpirun/srun: devices per rank (docs/mpi.md)")
      ->capture_default_str();
  cmd->add_option("--json", a->json, "write the result as JSON");
  cmd->add_option("--trace", a->trace, "write a Chrome/Perfetto trace from StarPU profiling info");
  cmd->callback([a] { run(*a); });
}

}  // namespace rrfp::cli
