// Multi-rank check, run under mpirun by CTest: executes a synthetic graph
// with execute_mpi() and, on rank 0, verifies that every task ran exactly
// once, on its device's worker of the rank that owns the device, after all
// of its inputs (cross-rank ones included), and within the in-flight cap.
// Usage: rrfp_mpi_check HINT STAGES MICROBATCHES DEVICES_PER_RANK [UNIT_MS] [LINK_MS] [VARIABILITY]
// Policy from STARPU_SCHED. Exit 0 when every check holds. Without mpirun
// it runs the same graph in one process (execute()), for comparison.
// Transport `cuda`: StarPU-MPI with the devices as CUDA workers
// (ExecOptions::cuda). Without a usable GPU every rank must refuse with an
// error naming --cuda and then run the graph on CPU workers as usual; with
// one, passes run on CUDA workers and messages are counted, not read (their
// bytes are on the GPU: `rrfp bench --cuda` checks them there).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "codelets/cost_model.hpp"
#include "drivers/env_config.hpp"
#include "drivers/fatal.hpp"
#include "hints/generators.hpp"
#include "mpi/mpi_channel_wire.hpp"
#include "mpi/mpi_comm.hpp"
#include "mpi/mpi_executor.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/ordered_channels.hpp"
#include "runtime/fault_hook.hpp"
#include "runtime/payload.hpp"

#include <mpi.h>

#include "tests/mpi/contract_wire.hpp"

using namespace rrfp;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s HINT STAGES MICROBATCHES DEVICES_PER_RANK [UNIT_MS] [LINK_MS] [VARIABILITY] [starpu-mpi|ordered|ordered-wrong|ordered-contract|cuda]\n", argv[0]);
    return 2;
  }
  HintParams p;
  p.stages = std::atoi(argv[2]);
  p.microbatches = std::atoi(argv[3]);
  MpiOptions mo;
  mo.devices_per_rank = std::atoi(argv[4]);
  CostOptions c;
  c.unit_ms = argc > 5 ? std::atof(argv[5]) : 1;
  c.link_ms = argc > 6 ? std::atof(argv[6]) : 0;
  c.link_jitter = c.link_ms > 0 ? 0.5 : 0;
  c.var = parse_variability(argc > 7 ? argv[7] : "lognormal:0.3");
  if (argc > 8 && std::string(argv[8]).rfind("ordered", 0) == 0) mo.transport = RankTransportKind::Ordered;
  // ordered-wrong: receives posted into buffers in the order they came, not by announcement: must fail.
  std::unique_ptr<MpiOrderedChannels> own_channels;  // instead of the process's own
  if (argc > 8 && std::string(argv[8]) == "ordered-wrong") {
    own_channels = std::make_unique<MpiOrderedChannels>(ordered_channels_comm(), MpiOrderedChannels::Receive::BufferOrder);
    mo.channels = own_channels.get();
  }
  // ordered-contract: the channels held to what the NCCL wire relies on (contract_wire.hpp);
  // RRFP_TEST_ABSENT_RANK=R: rank R never joins the wire's set-up.
  if (argc > 8 && std::string(argv[8]) == "ordered-contract") {
    const char* absent = std::getenv("RRFP_TEST_ABSENT_RANK");
    const int absent_rank = absent && *absent ? std::atoi(absent) : -1;
    own_channels = std::make_unique<MpiOrderedChannels>(
        ordered_channels_comm(), MpiOrderedChannels::Receive::Announced,
        std::make_unique<ContractWire>(mpi_channel_wire(ordered_channels_comm()), ordered_channels_comm(),
                                       absent_rank >= 0 && mpi_world().rank == absent_rank));
    mo.channels = own_channels.get();
  }
  const bool cuda = argc > 8 && std::string(argv[8]) == "cuda";
  try {
    Hint h = make_hint(argv[1], p);
    const TaskGraph& g = *h.graph;
    Durations d = draw(g, c);
    ExecOptions o;
    if (c.link_ms > 0) o.link_delay_s = [&d](int id, int k) { return d.edge(id, k); };
    // Test hooks: a task that throws, kills its rank or hangs.
    for (auto [var, action] : {std::pair{"RRFP_MPI_FAIL_TASK", FaultAction::Throw},
                               std::pair{"RRFP_MPI_KILL_TASK", FaultAction::Kill},
                               std::pair{"RRFP_MPI_HANG_TASK", FaultAction::Hang}})
      if (const char* t = std::getenv(var); t && *t) o.task_hook = make_fault_hook(g, t, action, var);
    if (const char* t = std::getenv("RRFP_MPI_TIMEOUT_S"); t && *t) mo.timeout_s = std::atof(t);
    o.message_bytes = 1000;  // every message checked byte for byte by its consumer
    std::atomic<int> checked{0};
    auto body = [&](int id, const TaskIo& io) {
      const Task& t = g.task(id);
      if (io.stream) {  // a CUDA worker: the bytes are on its GPU
        if (io.in) checked.fetch_add(1);
      } else if (io.in) {
        const int from = t.kind == Kind::F ? g.find(Kind::F, t.stage - 1, t.mb) : g.backward_of(t.stage + 1, t.mb);
        if (check_payload(io.in, io.bytes, payload_key(7, from, 0)) >= 0)
          throw std::runtime_error(fmt::format("message {} -> {} corrupted", g.label(from), g.label(id)));
        checked.fetch_add(1);
      }
      if (io.out && !io.stream) fill_payload(io.out, io.bytes, payload_key(7, id, 0));
      std::this_thread::sleep_for(std::chrono::duration<double>(d.task_s[id]));
    };
    MpiExecResult m;
    if (cli::launched_under_mpi()) {
      try {
        if (cuda) {
          o.cuda = true;
          try {
            m = execute_mpi(h, body, o, mo);
          } catch (const SpecError& e) {
            if (std::string(e.what()).find("--cuda") == std::string::npos)
              throw std::runtime_error(fmt::format("the refusal does not name --cuda: {}", e.what()));
            if (checked.load() != 0) throw std::runtime_error("refused after passes ran");
            if (mpi_world().rank == 0) fmt::print("--cuda refused on every rank: {}\n", e.what());
            o.cuda = false;  // the process can still run StarPU-MPI on CPU workers
          }
        }
        if (!o.cuda) m = execute_mpi(h, body, o, mo);
      } catch (const UnrecoverableError& e) {
        cli::abort_all_ranks(e.what());
      }
    } else {  // the same graph in one process, for comparison
      mo.devices_per_rank = h.devices();
      m.devices_per_rank = h.devices();
      m.exec = execute(h, body, o);
      m.task_rank.assign(g.size(), 0);
      for (int dev = 0; dev < h.devices(); ++dev)
        for (int id : h.order[dev]) m.exec.worker[id] = m.exec.worker[id] == m.exec.device_worker[dev] ? dev : -1;
      for (int dev = 0; dev < h.devices(); ++dev) m.exec.device_worker[dev] = dev;
    }
    // Every message a rank received was checked: count them over all ranks.
    int all_checked = checked.load();
    if (cli::launched_under_mpi()) MPI_Allreduce(MPI_IN_PLACE, &all_checked, 1, MPI_INT, MPI_SUM, rrfp_mpi_comm());
    if (!m.root()) return 0;
    const ExecResult& r = m.exec;
    int bad = 0;
    auto fail = [&](const std::string& s) {
      if (++bad <= 10) std::fprintf(stderr, "check failed: %s\n", s.c_str());
    };
    for (int dev = 0; dev < h.devices(); ++dev) {
      auto a = r.order[dev], b = h.order[dev];
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (a != b) fail(fmt::format("device {} did not run each of its tasks exactly once", dev));
    }
    for (int id = 0; id < g.size(); ++id) {
      const int dev = g.task(id).device;
      if (m.task_rank[id] != dev / mo.devices_per_rank)
        fail(fmt::format("{} ran on rank {}, its device {} belongs to rank {}", g.label(id), m.task_rank[id], dev,
                         dev / mo.devices_per_rank));
      if (r.worker[id] != r.device_worker[dev]) fail(fmt::format("{} ran on the wrong worker", g.label(id)));
      for (int pr : g.preds(id))
        if (r.start_s[id] < r.end_s[pr])
          fail(fmt::format("{} started {:.6f} s before its input {} ended", g.label(id), r.end_s[pr] - r.start_s[id],
                           g.label(pr)));
    }
    const bool capped = r.policy == "rrfp" || r.policy == "rrfp-fixed";
    for (int dev = 0; capped && dev < h.devices(); ++dev)
      if (r.peak_inflight[dev] > r.inflight_cap[dev])
        fail(fmt::format("device {} held {} activations, cap {}", dev, r.peak_inflight[dev], r.inflight_cap[dev]));
    int messages = 0;  // every F and backward that reads another stage's output
    for (int id = 0; id < g.size(); ++id) {
      const Task& t = g.task(id);
      messages += t.kind == Kind::F ? t.stage > 0 : (t.kind != Kind::W && t.stage + 1 < g.spec().stages);
    }
    if (all_checked != messages) fail(fmt::format("{} messages checked byte for byte, the graph has {}", all_checked, messages));
    if (r.explicit_dependencies != 0) fail(fmt::format("{} dependencies declared by hand", r.explicit_dependencies));
    fmt::print("{} ranks x {} devices, policy {}, hint {}: {} tasks, {} messages ({} across ranks, all {} checked), "
               "makespan {:.4f} s: {}\n", m.ranks, m.devices_per_rank, r.policy, h.name, r.tasks, messages, m.messages,
               all_checked, r.makespan_s, bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rrfp_mpi_check: %s\n", e.what());
    return 2;
  }
}
