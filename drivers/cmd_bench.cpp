// rrfp bench: a hint's task graph on real StarPU workers with synthetic,
// seeded task costs; the policy comes from STARPU_SCHED (default rrfp-wait).
#include <memory>

#include <fmt/format.h>

#include "drivers/commands.hpp"
#include "drivers/env_config.hpp"
#include "drivers/flags.hpp"
#include "drivers/rank_transport_flag.hpp"
#include "hints/csv.hpp"
#include "runtime/bench.hpp"
#include "mpi/mpi_executor.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tp_comm.hpp"
#include "runtime/session.hpp"
#include "sched/policy_registry.hpp"
#include "sim/json_file.hpp"
#ifdef RRFP_HAVE_CUDA
#include "gpu/synthetic_pass.hpp"
#endif

namespace rrfp::cli {

namespace {

struct BenchArgs {
  HintFlags hint;
  CostFlags cost;
  ProfileFlags profile;
  std::string json, trace, policy, collective_log;
  int tensor_parallel = 1;
  int slack = -1, iterations = 1;
  int devices_per_rank = 1;  // under mpirun/srun (docs/mpi.md)
  std::string rank_transport = "starpu-mpi";
  const CLI::Option* rank_transport_flag = nullptr;
  const CLI::Option* devices_per_rank_flag = nullptr;
  bool cuda = false;         // devices are CUDA workers (docs/gpu.md)
  bool check_sim = false;    // replay each iteration in the simulator (sim/decision_check.hpp)
  double message_mb = 4.0 / 1024;  // every activation and gradient handle: 4 KiB
};

// What every rank of one `rrfp bench` under mpirun must agree on: the
// graph and its order, the costs each rank draws for its own tasks, the
// message sizes and the transport. Ranks started with other flags (an MPMD
// line) abort inside StarPU-MPI, wait forever or time a different run.
nlohmann::json rank_agreement(const Hint& hint, const BenchConfig& cfg, const BenchArgs& a, RankTransportKind t) {
  nlohmann::json base = nlohmann::json::array();
  for (const BaseCost& c : cfg.cost.stage_base) base.push_back({c.f, c.b, c.w, c.bw});
  return {{"order", csv_rows(hint)},
          {"costs", {variability_label(cfg.cost), cfg.cost.unit_ms, cfg.cost.link_ms, cfg.cost.link_jitter,
                     cfg.cost.seed, base, cfg.cost.stage_sigma, cfg.cost.base.f, cfg.cost.base.b, cfg.cost.base.w,
                     cfg.cost.base.bw}},
          {"iterations", cfg.iterations},
          {"message_bytes", cfg.exec.message_bytes},
          {"run", {a.tensor_parallel, a.devices_per_rank, static_cast<int>(t), a.cuda}}};
}

void run(const BenchArgs& a) {
  refuse_train_fault_env("rrfp bench", " (it fails a task with RRFP_MPI_FAIL_TASK=LABEL)");
  const bool mpi = launched_under_mpi();  // devices spread over ranks: see docs/mpi.md
  if (a.tensor_parallel < 1) throw SpecError("--tensor-parallel must be at least 1");
  Hint hint = a.hint.make();  // the generators and the CSV import check the dimensions
  if (!mpi && !a.cuda && hint.devices() * a.tensor_parallel > max_cpu_workers())
    throw SpecError(fmt::format("{} devices x --tensor-parallel {}: one StarPU CPU worker per device and at most {} here",
                                hint.devices(), a.tensor_parallel, max_cpu_workers()));
  // Under mpirun rank 0 writes, maybe on a file system only it sees.
  const std::vector<std::pair<const char*, std::string>> outputs = {
      {"--json", a.json}, {"--trace", a.trace}, {"--collective-log", a.collective_log}};
  mpi ? refuse_same_output(outputs) : check_outputs(outputs);
  if (!a.collective_log.empty() && a.tensor_parallel < 2)
    throw SpecError("--collective-log needs --tensor-parallel 2 or more");
  BenchConfig cfg;
  cfg.cost = a.cost.resolve();
  // A profile of groups holds a member's costs, which the bench would
  // split over --tensor-parallel members once more: rrfp sim models them.
  if (const int members = a.profile.given() ? read_profile(a.profile.profile).tensor_parallel : 1; members > 1)
    throw SpecError(fmt::format("--profile {}: it holds a tensor-parallel member's costs (tensor_parallel {}); rrfp "
                                "bench replays whole devices' costs and splits them over --tensor-parallel itself: "
                                "give a profile of whole devices, or simulate the groups (rrfp sim --profile)",
                                a.profile.profile, members));
  if (a.profile.given())
    a.profile.apply(cfg.cost, a.profile.costs(hint.spec().stages), a.cost);
  else if (!a.profile.partition.empty())
    throw SpecError("--partition needs --profile FILE");
  cfg.exec.policy = a.policy;
  cfg.exec.inflight_slack = a.slack >= 0 ? a.slack : inflight_slack_from_env();
  cfg.exec.profile = !a.trace.empty();
  cfg.iterations = a.iterations;
  cfg.exec.tensor_parallel = a.tensor_parallel;
  if (!(a.message_mb > 0) || a.message_mb > 4096) throw SpecError("--message-mb must be in (0, 4096]");
  cfg.exec.message_bytes = static_cast<std::size_t>(a.message_mb * 1024 * 1024 + 0.5);
  if (cfg.exec.message_bytes < 1) cfg.exec.message_bytes = 1;
  cfg.exec.task_hook = fault_hook_from_env(hint);
  cfg.check_decisions = a.check_sim;
  if (a.check_sim && mpi) throw SpecError("--check-sim replays one process's arbiter: run it without mpirun");
  const RankTransportKind transport = rank_transport_from_flag(a.rank_transport, mpi, a.rank_transport_flag);
  check_devices_per_rank_flag(mpi, a.devices_per_rank_flag);
  if (mpi) {
    if (!mpi_all_equal(rank_agreement(hint, cfg, a, transport).dump()))
      throw SpecError("the ranks were started with different `rrfp bench` flags (hint, sizes, costs, seed, "
                      "iterations, message size, transport or tensor parallelism differ): every rank needs the "
                      "same ones");
    MpiOptions mo;
    mo.devices_per_rank = a.devices_per_rank;
    mo.transport = transport;
    mo.timeout_s = mpi_timeout_from_env();
    if (a.tensor_parallel > 1) {
      auto comm = std::make_shared<MpiTpComm>(hint.devices(), a.tensor_parallel, a.devices_per_rank,
                                              kBenchAllreduceFloats, 30.0);
      mo.tp_comm = comm.get();
      cfg.comm = comm;
    }
    cfg.executor = mpi_executor(mo);
  }
#ifdef RRFP_HAVE_CUDA
  std::unique_ptr<gpu::SyntheticPasses> passes;
#endif
  if (a.cuda) {
#ifndef RRFP_HAVE_CUDA
    throw SpecError("--cuda: this rrfp was built without CUDA (configure with -DRRFP_CUDA=ON, docs/gpu.md)");
#else
    if (a.tensor_parallel > 1) throw SpecError("--cuda does not support --tensor-parallel yet");
    cfg.exec.cuda = true;
    // StarPU before any CUDA call: its bus calibration may reset the GPU.
    if (mpi)
      prepare_mpi_session(cfg.exec, a.devices_per_rank);
    else
      prepare_session(hint, cfg.exec);
    passes = std::make_unique<gpu::SyntheticPasses>(hint.graph->size());
    cfg.device_passes = passes.get();
#endif
  }
  BenchReport r = run_bench(hint, cfg);
  if (mpi && mpi_world().rank != 0) return;  // every rank has the merged run; rank 0 reports
  fmt::print("policy {}  hint {}  {} stages on {} devices  {} microbatches  {} tasks  variability {}  seed {}\n", r.policy,
             r.hint, r.stages, r.devices, r.microbatches, r.tasks, r.variability, r.seed);
  fmt::print("makespan {:.4f} s  lower bound {:.4f} s  ratio {:.3f}  bubble {:.3f}  ({} iteration{})\n", r.makespan_s,
             r.lower_bound_s, r.makespan_over_lb, r.bubble_ratio, r.iterations, r.iterations > 1 ? "s" : "");
  if (r.tensor_parallel > 1)
    fmt::print("tensor-parallel {}: collective order identical on every member in {} of {} iterations\n",
               r.tensor_parallel, r.collective_orders_identical, r.iterations);
  fmt::print("messages: {} checked byte for byte on {}, {} bytes each\n", r.messages_checked,
             mpi ? "rank 0" : "their consumers", r.message_bytes);
  // Only the rrfp policies hold the cap; under another the peak is what that
  // policy did, and the cap is what rrfp would have allowed.
  const bool capped = resolve_policy(r.policy).uses_arbiter();
  for (int d = 0; d < r.devices; ++d)
    fmt::print("  device {}: busy {:.4f} s  peak in-flight {} ({}cap {}{})\n", d, r.busy_s[d], r.peak_inflight[d],
               capped ? "" : "the rrfp policies' ", r.inflight_cap[d], capped ? "" : ", not held by " + r.policy);
  if (a.check_sim) {
    int agree = 0, pinned = 0, late = 0;
    for (const DecisionCheck& c : r.decision_checks) agree += c.agrees(), pinned += c.pinned, late += c.late_workers;
    fmt::print("simulator vs StarPU: the replay from recorded durations decided as the policy did in {} of {} "
               "iterations ({} late worker{} held), the replay pinned to the recorded instants in {}\n",
               agree, r.iterations, late, late == 1 ? "" : "s", pinned);
    for (size_t i = 0; i < r.decision_checks.size(); ++i)
      if (!r.decision_checks[i].agrees() || !r.decision_checks[i].pinned)
        fmt::print("  iteration {}: {}\n", i, r.decision_checks[i].describe(*hint.graph));
  }
  if (!a.json.empty()) {
    write_json_file(a.json, to_json(r));
  }
  if (!a.collective_log.empty()) write_json_file(a.collective_log, collective_logs_json(hint, r), -1);
  if (!a.trace.empty())
    write_chrome_trace(to_timeline(hint, r.last, fmt::format("rrfp bench {} {}", r.policy, r.hint)), a.trace);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  a->hint.hint = "bfw";
  auto* cmd = app.add_subcommand("bench", "Run a hint's task graph on StarPU workers with synthetic seeded costs "
                                          "(policy: STARPU_SCHED, default rrfp-wait)");
  add_hint_flags(cmd, a->hint, false);
  add_cost_flags(cmd, a->cost);
  add_profile_flags(cmd, a->profile);
  cmd->add_option("--inflight-slack", a->slack, "raise the in-flight cap by K (default RRFP_INFLIGHT_SLACK or 0)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--message-mb", a->message_mb,
                  "size of every activation and gradient message (StarPU data handle), MiB; checked by its consumer")
      ->capture_default_str();
  cmd->add_option("--iterations", a->iterations, "iterations (iteration i uses seed+i)")->capture_default_str();
  cmd->add_option("--policy", a->policy, "override STARPU_SCHED");
  a->devices_per_rank_flag =
      cmd->add_option("--devices-per-rank", a->devices_per_rank, "under mpirun/srun: devices per rank (docs/mpi.md)")
          ->capture_default_str();
  a->rank_transport_flag = add_rank_transport_flag(cmd, &a->rank_transport);
  cmd->add_option("--tensor-parallel", a->tensor_parallel,
                  "split each device's tasks over T workers with all-reduces inside F and B (docs/tensor-parallel.md)")
      ->capture_default_str();
  cmd->add_option("--collective-log", a->collective_log,
                  "with --tensor-parallel: write every member's collective order, per iteration, as JSON");
  cmd->add_flag("--cuda", a->cuda,
                "devices are CUDA workers: each pass a kernel on its worker's stream (CUDA builds; docs/gpu.md)");
  cmd->add_flag("--check-sim", a->check_sim,
                "replay each iteration in the simulator from what the policy saw and compare their decisions "
                "(rrfp policies, one process; docs/simulator.md)");
  cmd->add_option("--json", a->json, "write the result as JSON");
  cmd->add_option("--trace", a->trace,
                  "write a Chrome/Perfetto trace from StarPU profiling info (the last iteration; member 0 with "
                  "--tensor-parallel)");
  cmd->callback([a] { run(*a); });
}

}  // namespace rrfp::cli
