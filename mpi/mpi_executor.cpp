#include "mpi/mpi_executor.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <mpi.h>
#include <starpu_mpi.h>

#include "runtime/graph_run.hpp"
#include "mpi/gpu_channels.hpp"
#include "mpi/mpi_comm.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tp_comm.hpp"
#include "mpi/ordered_channels.hpp"
#include "mpi/tp_decisions.hpp"
#include "runtime/run_plan.hpp"
#include "runtime/run_stats.hpp"
#include "runtime/session.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {

namespace {

// StarPU-MPI over MPI_COMM_WORLD: the submitter's rank transport; with
// ordered channels, the messages go through them instead.
class StarpuMpiTransport final : public RankTransport {
 public:
  explicit StarpuMpiTransport(MessageChannels* channels) : channels_(channels) {}
  MessageChannels* channels() override { return channels_; }
  void register_handle(starpu_data_handle_t h, std::int64_t tag, int owner) override {
    starpu_mpi_data_register(h, static_cast<starpu_mpi_tag_t>(tag), owner);
  }
  starpu_task* build(starpu_codelet* cl, starpu_data_descr* descr, int nb, int where) override {
    return starpu_mpi_task_build(MPI_COMM_WORLD, cl, STARPU_DATA_MODE_ARRAY, descr, nb, STARPU_EXECUTE_ON_NODE, where, 0);
  }
  void post_build(starpu_codelet* cl, starpu_data_descr* descr, int nb, int where) override {
    starpu_mpi_task_post_build(MPI_COMM_WORLD, cl, STARPU_DATA_MODE_ARRAY, descr, nb, STARPU_EXECUTE_ON_NODE, where, 0);
  }
  void wait_sends() override { starpu_mpi_wait_for_all(MPI_COMM_WORLD); }
  std::unique_ptr<DecisionChannel> decisions(const Hint& hint, int T, int K, int me) override {
    return std::make_unique<TpDecisions>(hint, T, K, me);
  }

 private:
  MessageChannels* channels_;
};

// Kept across runs (its thread lives per run); left to the process when a
// run fails, since its thread may still point into it.
MpiOrderedChannels* ordered_channels() {
  static auto* c = new MpiOrderedChannels(ordered_channels_comm());
  return c;
}

// With --cuda: NCCL on the one GPU of this rank's devices (a communicator
// has one GPU), the channel tasks on the CUDA workers of that GPU (the
// session may hold others). Every rank decides alike, so none is left
// waiting in the run.
MessageChannels* gpu_channels(const std::vector<int>& local_worker, std::vector<int>& channel_workers) {
  const int gpu = starpu_worker_get_devid(local_worker.at(0));
  double several = 0;  // 1 on a rank whose devices span GPUs, then on every rank
  for (int w : local_worker)
    if (starpu_worker_get_devid(w) != gpu) several = 1;
  mpi_max_in_place(&several, 1);
  if (several > 0)
    throw SpecError("--rank-transport ordered with --cuda needs each rank's devices on one GPU (its NCCL "
                    "communicators have one): launch a rank per GPU, or use --rank-transport starpu-mpi");
  channel_workers.clear();
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w)
    if (starpu_worker_get_type(static_cast<int>(w)) == STARPU_CUDA_WORKER && starpu_worker_get_devid(static_cast<int>(w)) == gpu)
      channel_workers.push_back(static_cast<int>(w));
  return nccl_ordered_channels(gpu);
}

}  // namespace

MpiExecResult execute_mpi(const Hint& hint, const TaskBody& body, const ExecOptions& opt, const MpiOptions& mopt) {
  const TaskGraph& g = *hint.graph;
  const int n = g.size(), D = hint.devices(), K = mopt.devices_per_rank, T = opt.tensor_parallel;
  const MpiWorld world = mpi_world();
  const int me = world.rank, R = world.size;
  if (K < 1) throw SpecError("--devices-per-rank must be at least 1");
  if (!opt.cuda && K > max_cpu_workers())
    throw SpecError(fmt::format("--devices-per-rank {} exceeds the {} CPU workers this StarPU allows", K, max_cpu_workers()));
  std::vector<unsigned char> local(D, 0);  // devices whose leader this rank runs
  for (int d = 0; d < D; ++d) local[d] = (d * T) / K == me;
  RunPlan plan = plan_run(hint, opt, local);  // checks the policy and T first
  const PolicyChoice& choice = plan.choice;
  if (D * T != R * K)
    throw SpecError(fmt::format("the hint has {} devices{} but {} ranks x {} devices per rank = {}; launch {} ranks or "
                                "set --devices-per-rank",
                                D * T, T > 1 ? fmt::format(" ({} x {} tensor-parallel)", D, T) : "", R, K, R * K,
                                (D * T) % K == 0 ? D * T / K : D * T));
  auto rank_of = [&](int id, int member = 0) { return (g.task(id).device * T + member) / K; };

  MpiExecResult out;
  out.rank = me;
  out.ranks = R;
  out.devices_per_rank = K;
  ExecResult& res = out.exec;
  res.policy = choice.name;
  res.devices = D;
  res.tasks = n;
  res.tensor_parallel = T;

  // Kept open between runs (its start-up is tens of milliseconds a step);
  // the records are gathered on our own communicator (mpi_comm.hpp).
  MpiStarpuSession* session = &MpiStarpuSession::reuse(choice, K, opt.profile, opt.cuda);
  std::vector<int> local_worker(K), local_of_worker(starpu_worker_get_count(), -1);
  for (int i = 0; i < K; ++i) {
    local_worker[i] = session->worker_of_local(i);
    local_of_worker[local_worker[i]] = i;
  }
  MessageChannels* channels = nullptr;  // StarPU-MPI moves the messages
  std::vector<int> channel_workers;      // any worker here
  if (mopt.transport == RankTransportKind::Ordered && mopt.channels) channels = mopt.channels;
  else if (mopt.transport == RankTransportKind::Ordered)
    channels = opt.cuda ? gpu_channels(local_worker, channel_workers) : ordered_channels();
  if (mopt.tp_comm) mopt.tp_comm->open();
  // The policy maps every slot to a worker; another rank's slots have
  // none here (RRFP_REMOTE_WORKER), so nothing ever pops for them.
  StarpuMpiTransport transport(channels);
  GraphRunSpec spec(hint, body, opt, plan, RankLayout{me, R, K, &transport});
  spec.channel_workers = channel_workers;
  spec.worker_of_slot.assign(D * T, RRFP_REMOTE_WORKER);
  for (int i = 0; i < K; ++i) spec.worker_of_slot[me * K + i] = local_worker[i];
  // Another rank's slow task looks like no progress here: the window is
  // the MPI timeout when given, else the executor's stall timeout.
  if (mopt.timeout_s > 0) spec.timeout_s = mopt.timeout_s;
  GraphRunOutcome ran;
  try {
    ran = run_graph(spec);
  } catch (const UnrecoverableError&) {
    // Any failure: other ranks still wait for us. No shutdown (it would
    // wait for them forever); the driver aborts every rank.
    MpiStarpuSession::abandon();
    throw;
  } catch (...) {
    MpiStarpuSession::close_reused();
    throw;
  }
  if (mopt.tp_comm) mopt.tp_comm->close();
  // StarPU's workerorder counter lives as long as the session and must grow
  // across runs, so a static-order run does not leave its session for the next.
  if (choice.kind == PolicyChoice::Kind::StaticOrder) MpiStarpuSession::close_reused();
  const RunState& run = *ran.run;
  out.messages = ran.rank_messages;
  res.transfers = ran.transfers;
  res.data_handles = ran.data_handles;
  res.rank_messages = ran.rank_messages;
  const double t0 = ran.t_submit, wall_local = ran.wall_s;
  const int n_local = run.total;
  struct Rec {
    double id, start, end, worker, pos;
  };
  // One time origin for all ranks: the earliest local start. steady_clock
  // is CLOCK_MONOTONIC, shared by the processes of one host.
  double t_origin = t0;
  MPI_Allreduce(&t0, &t_origin, 1, MPI_DOUBLE, MPI_MIN, rrfp_mpi_comm());
  std::vector<Rec> mine;
  mine.reserve(n_local);
  for (int mt = 0; mt < n * T; ++mt)
    if (rank_of(mt % n, mt / n) == me) {
      const int w = run.worker[mt];
      const int li = w >= 0 && w < static_cast<int>(local_of_worker.size()) ? local_of_worker[w] : -1;
      mine.push_back({double(mt), run.start[mt] - t_origin, run.end[mt] - t_origin,
                      li >= 0 ? double(me * K + li) : -1.0 - w, double(run.pos[mt])});
    }
  res.inflight_cap = plan.inflight_caps(hint, opt);
  res.waits = plan.arb ? plan.arb->waits() : 0;
  // Every rank gets the merged run (doubles: five per task), so callers
  // compute the same statistics everywhere and only printing is rank 0's.
  int count = static_cast<int>(mine.size() * 5);
  std::vector<int> counts(R), displs(R);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, rrfp_mpi_comm());
  int total = 0;
  for (int r = 0; r < R; ++r) displs[r] = total, total += counts[r];
  std::vector<double> all(total);
  MPI_Allgatherv(reinterpret_cast<double*>(mine.data()), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, rrfp_mpi_comm());
  double wall = 0;
  MPI_Allreduce(&wall_local, &wall, 1, MPI_DOUBLE, MPI_MAX, rrfp_mpi_comm());

  res.wall_s = wall;
  res.start_s.assign(n, -1);
  res.end_s.assign(n, -1);
  res.worker.assign(n, -1);
  out.task_rank.assign(n, -1);
  // Global worker id = rank * K + local index = slot (d*T + member); the
  // leader's records stand for the task, as in execute().
  std::vector<std::vector<std::pair<int, int>>> by_slot(D * T);  // (position, task)
  for (int r = 0; r < R; ++r)
    for (int i = displs[r]; i < displs[r] + counts[r]; i += 5) {
      const int mt = static_cast<int>(all[i]), id = mt % n, w = static_cast<int>(all[i + 3]);
      if (w >= 0 && w < D * T) by_slot[w].push_back({static_cast<int>(all[i + 4]), id});
      if (mt >= n) continue;
      res.start_s[id] = all[i + 1];
      res.end_s[id] = all[i + 2];
      res.worker[id] = w;
      out.task_rank[id] = r;
    }
  for (int slot = 0; slot < D * T; ++slot) {
    std::sort(by_slot[slot].begin(), by_slot[slot].end());
    res.member_worker.push_back(slot);
    res.member_order.emplace_back();
    for (auto [p, id] : by_slot[slot]) res.member_order.back().push_back(id);
  }
  if (opt.stage_epilogue) {  // this rank's stages only (global worker ids, as for tasks)
    // S * T epilogues, or one per group and stage (ExecOptions::epilogue_group).
    const int E = static_cast<int>(run.epi_worker.size());
    res.epilogue_worker.assign(E, -1);
    res.epilogue_start_s.assign(E, -1);
    res.epilogue_end_s.assign(E, -1);
    for (int i = 0; i < E; ++i) {
      const int w = run.epi_worker[i];
      if (w < 0) continue;
      const int li = w < static_cast<int>(local_of_worker.size()) ? local_of_worker[w] : -1;
      res.epilogue_worker[i] = li >= 0 ? me * K + li : -1 - w;
      res.epilogue_start_s[i] = run.epi_start[i] - t_origin;
      res.epilogue_end_s[i] = run.epi_end[i] - t_origin;
    }
  }
  res.device_worker.resize(D);
  res.order.assign(D, {});
  for (int d = 0; d < D; ++d) {
    res.device_worker[d] = d * T;
    res.order[d] = res.member_order[d * T];
  }
  fill_run_stats(g, res);
  return out;
}

std::vector<int> prepare_mpi_session(const ExecOptions& opt, int devices_per_rank) {
  if (devices_per_rank < 1) throw SpecError("--devices-per-rank must be at least 1");
  const MpiStarpuSession& s = MpiStarpuSession::reuse(resolve_policy(opt.policy), devices_per_rank, opt.profile, opt.cuda);
  std::vector<int> gpus;
  for (int i = 0; opt.cuda && i < devices_per_rank; ++i)
    gpus.push_back(starpu_worker_get_devid(s.worker_of_local(i)));
  return gpus;
}

Executor mpi_executor(const MpiOptions& mopt) {
  return [mopt](const Hint& h, const TaskBody& body, const ExecOptions& o) { return execute_mpi(h, body, o, mopt).exec; };
}

}  // namespace rrfp
