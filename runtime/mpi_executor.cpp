#include "runtime/mpi_executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>
#include <starpu_mpi.h>

#include "hints/replay.hpp"
#include "runtime/link_thread.hpp"
#include "runtime/run_plan.hpp"
#include "runtime/run_state.hpp"
#include "runtime/mpi_session.hpp"
#include "runtime/mpi_tp_comm.hpp"
#include "runtime/run_stats.hpp"
#include "runtime/session.hpp"
#include "runtime/starpu_tasks.hpp"
#include "sched/arbiter.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {

namespace {

struct OutEdge {
  int consumer, k, edge, dest;
};

// Tensor parallelism across ranks: the leader of a device group tells the
// followers on other ranks, one message per task it starts, which task
// that is (k-th decision: tag kDecisionTags + d * n + k).
constexpr std::int64_t kDecisionTags = std::int64_t{1} << 58;

struct Decisions {
  std::vector<int> dests;                  // leader's rank: ranks of remote followers
  std::vector<std::int64_t> out;           // leader's rank: k-th task started
  std::vector<starpu_data_handle_t> out_h;
  int next_out = 0;                        // touched by the leader's worker only
  std::vector<int> followers;              // follower's rank: its members of the group
  std::vector<std::int64_t> in;
  std::vector<starpu_data_handle_t> in_h;
  std::vector<unsigned char> got;
  int next_in = 0;
};

// The MPI executor's run: the shared records (in absolute seconds: t0 is
// the clock's epoch) plus messages, decisions and the test hooks.
struct Run : RunState {
  std::vector<Decisions> dec;  // per device
  std::mutex dec_m;
  const MpiPayload* payload = nullptr;
  std::vector<std::vector<OutEdge>> out;             // per task: its cross-rank out-edges
  std::vector<std::vector<std::pair<int, int>>> in;  // per task: (k, edge) of its cross-rank inputs
  std::vector<std::vector<unsigned char>> buf;       // per edge touching this rank
  std::vector<starpu_data_handle_t> handle;          // per edge touching this rank
  std::vector<int> pos;                              // per task: its place in its worker's order
  std::atomic<int> received{0};
  std::string fail_task, kill_task, hang_task;
};

struct DecisionArg {
  Run* run;
  int device, k;
};

bool label_is(const TaskGraph& g, int id, const std::string& want) {
  if (want.empty()) return false;
  const Task& t = g.task(id);
  return g.label(id) == want || fmt::format("{}{}{}", t.stage, kind_name(t.kind), t.mb) == want;
}

void graph_task_body(void** /*buffers*/, void* cl_arg) {
  auto* a = static_cast<GraphTaskArg*>(cl_arg);
  Run* r = static_cast<Run*>(a->owner);
  const TaskGraph& g = *r->g;
  const int id = a->id, mt = a->member * r->n + id, w = starpu_worker_get_id();
  r->worker[mt] = w;
  r->pos[mt] = static_cast<int>(r->by_worker[w].size());
  r->by_worker[w].push_back(id);
  r->running.fetch_add(1);
  r->start[mt] = r->now();
  if (a->member == 0 && !r->dec.empty()) {  // tell the followers on other ranks
    Decisions& d = r->dec[g.task(id).device];
    if (!d.dests.empty()) {
      const int k = d.next_out++;
      d.out[k] = id;
      for (int dest : d.dests)
        if (starpu_mpi_isend_detached(d.out_h[k], dest, kDecisionTags + std::int64_t{g.task(id).device} * r->n + k,
                                      MPI_COMM_WORLD, nullptr, nullptr) != 0)
          r->fail(fmt::format("starpu_mpi_isend_detached of the decision {} failed", g.label(id)));
    }
  }
  std::string err = run_guarded(
      [&] {
        // Test hooks: a rank that dies (SIGKILL, no goodbye) or a task that throws.
        if (label_is(g, id, r->kill_task)) std::raise(SIGKILL);
        if (label_is(g, id, r->fail_task)) throw std::runtime_error("injected failure (RRFP_MPI_FAIL_TASK)");
        while (label_is(g, id, r->hang_task)) std::this_thread::sleep_for(std::chrono::seconds(1));
        if (r->payload->unpack)
          for (auto [k, e] : r->in[mt]) r->payload->unpack(mt, k, r->buf[e].data());
        (*r->body)(mt);
        for (const OutEdge& o : r->out[mt])
          if (r->payload->pack) r->payload->pack(o.consumer, o.k, r->buf[o.edge].data());
      },
      "task " + member_task_name(g.label(id), a->member, r->tp));
  const bool ok = err.empty();
  if (!ok) r->fail(std::move(err));
  r->end[mt] = r->now();
  // Messages leave as soon as the producer is done; a non-blocking call.
  if (ok)
    for (const OutEdge& o : r->out[mt])
      if (starpu_mpi_isend_detached(r->handle[o.edge], o.dest, o.edge, MPI_COMM_WORLD, nullptr, nullptr) != 0)
        r->fail(fmt::format("starpu_mpi_isend_detached for {} -> {} failed", g.label(id), g.label(o.consumer % r->n)));
  r->running.fetch_sub(1);
  r->finished_one();
}

// A cross-rank message arrived: its transfer completes after the link delay.
void message_received(void* arg) {
  auto* t = static_cast<TransferArg*>(arg);
  static_cast<Run*>(t->run)->received.fetch_add(1);
  t->run->link->schedule(t->task, t->delay_s);
  t->run->cv.notify_all();
}

// A leader's decision arrived: hand decisions to the local followers in
// the leader's order (messages of different k may overtake each other).
void decision_received(void* arg) {
  auto* a = static_cast<DecisionArg*>(arg);
  Run* r = a->run;
  {
    std::lock_guard<std::mutex> g(r->dec_m);
    Decisions& d = r->dec[a->device];
    d.got[a->k] = 1;
    for (; d.next_in < static_cast<int>(d.got.size()) && d.got[d.next_in]; ++d.next_in)
      for (int member : d.followers) policy_follow(a->device, member, static_cast<int>(d.in[d.next_in]));
  }
  r->received.fetch_add(1);
  r->cv.notify_all();
}

std::string env_str(const char* name) {
  const char* s = std::getenv(name);
  return s ? s : "";
}

}  // namespace

MpiExecResult execute_mpi(const Hint& hint, const std::function<void(int)>& body, const ExecOptions& opt,
                          const MpiOptions& mopt) {
  const TaskGraph& g = *hint.graph;
  const int n = g.size(), D = hint.devices(), K = mopt.devices_per_rank, T = opt.tensor_parallel, S = g.spec().stages;
  const MpiWorld world = mpi_world();
  const int me = world.rank, R = world.size;
  if (K < 1) throw SpecError("--devices-per-rank must be at least 1");
  if (K > max_cpu_workers())
    throw SpecError(fmt::format("--devices-per-rank {} exceeds the {} CPU workers this StarPU allows", K, max_cpu_workers()));
  // Slot d*T+t (member t of device d; T = 1: the device) lives on rank slot / K.
  auto rank_of = [&](int id, int member = 0) { return (g.task(id).device * T + member) / K; };
  std::vector<unsigned char> local(D, 0);  // devices whose leader this rank runs
  for (int d = 0; d < D; ++d) local[d] = (d * T) / K == me;
  RunPlan plan = plan_run(hint, opt, local);  // checks the policy and T first
  const PolicyChoice& choice = plan.choice;
  Arbiter* arb = plan.arb.get();
  if (D * T != R * K)
    throw SpecError(fmt::format("the hint has {} devices{} but {} ranks x {} devices per rank = {}; launch {} ranks or "
                                "set --devices-per-rank",
                                D * T, T > 1 ? fmt::format(" ({} x {} tensor-parallel)", D, T) : "", R, K, R * K,
                                (D * T) % K == 0 ? D * T / K : D * T));

  MpiExecResult out;
  out.rank = me;
  out.ranks = R;
  out.devices_per_rank = K;
  ExecResult& res = out.exec;
  res.policy = choice.name;
  res.devices = D;
  res.tasks = n;
  res.tensor_parallel = T;

  // Edges, indexed as in the pred array, member by member (member m's copy
  // of edge e is m*E + e); the tag of a message is that index.
  std::vector<int> edge_off(n + 1, 0);
  for (int id = 0; id < n; ++id) edge_off[id + 1] = edge_off[id] + g.preds(id).size();
  const int E = edge_off[n];

  // Another rank's slow task looks like no progress here: the window is
  // the executor's stall timeout, or RRFP_MPI_TIMEOUT_S.
  double timeout_s = opt.stall_timeout_s;
  if (const char* t = std::getenv("RRFP_MPI_TIMEOUT_S"); t && *t) {
    char* end = nullptr;
    timeout_s = std::strtod(t, &end);
    if (*end || !(timeout_s > 0)) throw SpecError(fmt::format("RRFP_MPI_TIMEOUT_S='{}' is not a positive number", t));
  }
  // Closed before gathering: once StarPU-MPI's progress thread is gone, the
  // MPI calls below are this thread's alone (MPI_THREAD_SERIALIZED).
  std::optional<MpiStarpuSession> session;
  session.emplace(choice, K, false);
  std::vector<int> local_worker(K), local_of_worker(starpu_worker_get_count(), -1);
  for (int i = 0; i < K; ++i) {
    local_worker[i] = session->worker_of_local(i);
    local_of_worker[local_worker[i]] = i;
  }
  if (mopt.tp_comm) mopt.tp_comm->open();

  Run run;
  run.g = &g;
  run.n = n;
  run.tp = T;
  run.body = &body;
  run.payload = &mopt.payload;
  run.out.resize(n * T);
  run.in.resize(n * T);
  run.buf.resize(E * T);
  run.handle.assign(E * T, nullptr);
  run.size_records(S * T);
  run.pos.assign(n * T, -1);
  run.fail_task = env_str("RRFP_MPI_FAIL_TASK");
  run.kill_task = env_str("RRFP_MPI_KILL_TASK");
  run.hang_task = env_str("RRFP_MPI_HANG_TASK");
  LinkThread link;
  run.link = &link;

  int n_local = 0, expected_msgs = 0;
  for (int mt = 0; mt < n * T; ++mt) {
    const int c = mt % n, m = mt / n;
    int k = 0;
    for (int p : g.preds(c)) {
      const int e = m * E + edge_off[c] + k;
      if (rank_of(p, m) != rank_of(c, m)) {
        if (m == 0) ++out.messages;
        if (rank_of(p, m) == me || rank_of(c, m) == me) {
          size_t bytes = mopt.payload.bytes ? std::max<size_t>(1, mopt.payload.bytes(mt, k)) : 8;
          run.buf[e].assign(bytes, 0);
          starpu_vector_data_register(&run.handle[e], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(run.buf[e].data()),
                                      static_cast<uint32_t>(bytes), 1);
        }
        if (rank_of(p, m) == me) run.out[m * n + p].push_back({mt, k, e, rank_of(c, m)});
        if (rank_of(c, m) == me) {
          run.in[mt].push_back({k, e});
          ++expected_msgs;
        }
      }
      ++k;
    }
    if (rank_of(c, m) == me) ++n_local;
  }

  // Tasks of this rank, restricted to their slot's worker.
  const bool strict = choice.kind == PolicyChoice::Kind::RrfpFixed || choice.kind == PolicyChoice::Kind::StaticOrder;
  std::vector<int> submit_order = strict ? strict_submission_order(hint) : std::vector<int>{};
  if (submit_order.empty()) submit_order = g.topological_order();
  starpu_codelet cl_plain = graph_codelet(graph_task_body, false, false, "rrfp_mpi_task");
  starpu_codelet cl_grad = graph_codelet(graph_task_body, true, !strict, "rrfp_mpi_wgrad");
  std::vector<double> grad(S * T, 0.0);
  const std::vector<starpu_data_handle_t> grad_h = register_variables(grad);  // index member * S + stage
  std::vector<WorkerPlacement> place;  // per local slot
  for (int i = 0; i < K; ++i) place.emplace_back(local_worker[i], choice.kind == PolicyChoice::Kind::StaticOrder);
  std::vector<GraphTaskArg> args(n * T);
  std::vector<starpu_task*> tasks(n * T, nullptr);
  for (int mt = 0; mt < n * T; ++mt) {
    const int id = mt % n, m = mt / n;
    if (rank_of(id, m) != me) continue;
    const Task& t = g.task(id);
    const int li = t.device * T + m - me * K;
    bool wgrad = t.kind == Kind::W || t.kind == Kind::BW;
    starpu_task* st = starpu_task_create();
    st->cl = wgrad ? &cl_grad : &cl_plain;
    if (wgrad) st->handles[0] = grad_h[m * S + t.stage];
    args[mt] = {id, &run, m};
    st->cl_arg = &args[mt];
    st->destroy = 0;
    st->priority = -hint.rank[id];
    place[li].place(st, static_cast<unsigned>(hint.rank[id] + 1));
    tasks[mt] = st;
  }
  // Dependencies, member by member: local tasks directly, other local
  // devices through a delayed transfer task, other ranks through a transfer
  // task released by the receive.
  std::vector<std::unique_ptr<TransferArg>> xfer_args;
  std::vector<std::vector<starpu_task*>> xfers_into(n * T);
  std::vector<std::pair<int, TransferArg*>> recvs;  // (edge, arg)
  std::unordered_set<starpu_task*> recv_x;          // submitted with their receive
  std::vector<starpu_task*> deps;
  for (int mt = 0; mt < n * T; ++mt) {
    if (!tasks[mt]) continue;
    const int id = mt % n, m = mt / n;
    deps.clear();
    int k = 0;
    for (int p : g.preds(id)) {
      const double delay = opt.link_delay_s ? opt.link_delay_s(id, k) : 0.0;
      if (g.task(p).device == g.task(id).device) {
        deps.push_back(tasks[m * n + p]);
      } else {
        starpu_task* x = starpu_task_create();
        x->cl = nullptr;
        x->destroy = 0;
        if (rank_of(p, m) == me) {
          starpu_task_declare_deps_array(x, 1, &tasks[m * n + p]);
          if (delay > 0) {
            xfer_args.push_back(std::make_unique<TransferArg>(TransferArg{&run, x, delay}));
            starpu_task_end_dep_add(x, 1);
            x->prologue_callback_pop_func = transfer_started;
            x->prologue_callback_pop_arg = xfer_args.back().get();
          }
        } else {
          xfer_args.push_back(std::make_unique<TransferArg>(TransferArg{&run, x, delay}));
          starpu_task_end_dep_add(x, 1);
          recvs.push_back({m * E + edge_off[id] + k, xfer_args.back().get()});
          recv_x.insert(x);
        }
        xfers_into[mt].push_back(x);
        deps.push_back(x);
      }
      ++k;
    }
    if (!deps.empty()) starpu_task_declare_deps_array(tasks[mt], static_cast<unsigned>(deps.size()), deps.data());
  }
  for (int id = 0; id < n; ++id) res.transfers += static_cast<int>(xfers_into[id].size());

  // Tensor-parallel groups spread over ranks: decision messages from the
  // leader's rank to its followers' ranks (the policy hands them over in
  // order, sched/rrfp_policy.hpp). Strict static-order needs none: every
  // member follows the hint by itself.
  std::vector<std::unique_ptr<DecisionArg>> dec_args;
  if (arb && T > 1) {
    run.dec.resize(D);
    for (int d = 0; d < D; ++d) {
      Decisions& dc = run.dec[d];
      const int leader = (d * T) / K, count = static_cast<int>(hint.order[d].size());
      std::vector<int> ranks;
      for (int t = 1; t < T; ++t) {
        const int r = (d * T + t) / K;
        if (r != leader && std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
        if (r == me && r != leader) dc.followers.push_back(t);
      }
      if (me == leader && !ranks.empty()) {
        dc.dests = ranks;
        dc.out.assign(count, -1);
        dc.out_h.assign(count, nullptr);
        for (int k = 0; k < count; ++k)
          starpu_variable_data_register(&dc.out_h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&dc.out[k]),
                                        sizeof(std::int64_t));
      }
      if (!dc.followers.empty()) {
        dc.in.assign(count, -1);
        dc.in_h.assign(count, nullptr);
        dc.got.assign(count, 0);
        for (int k = 0; k < count; ++k)
          starpu_variable_data_register(&dc.in_h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&dc.in[k]),
                                        sizeof(std::int64_t));
        expected_msgs += count;
      }
    }
  }

  // Epilogues of this rank's stages and members (as in executor.cpp): after
  // the stage's W/BW tasks by implicit data dependencies, on its worker.
  run.epilogue = opt.stage_epilogue ? &opt.stage_epilogue : nullptr;
  auto epi_slot = [&](int i) { return g.spec().device_of(i % S, 0) * T + i / S; };
  starpu_codelet cl_epi = epilogue_codelet(epilogue_body, "rrfp_mpi_epilogue");
  std::vector<EpilogueArg> epi_args;
  std::vector<starpu_task*> epi_tasks;
  if (run.epilogue)
    for (int i = 0; i < S * T; ++i)
      if (epi_slot(i) / K == me) epi_args.push_back({i, &run});
  for (const EpilogueArg& ea : epi_args) {
    const int li = epi_slot(ea.index) - me * K;
    starpu_task* st = starpu_task_create();
    st->cl = &cl_epi;
    st->handles[0] = grad_h[ea.index];  // indexed member * S + stage too
    st->cl_arg = const_cast<EpilogueArg*>(&ea);
    st->destroy = 0;
    place[li].place(st);
    epi_tasks.push_back(st);
  }
  n_local += static_cast<int>(epi_tasks.size());
  run.total = n_local;

  if (arb) {
    // The policy maps every slot to a worker; another rank's slots have
    // none here (kRemoteWorker), so nothing ever pops for them.
    std::vector<int> worker_of_slot(D * T, kRemoteWorker);
    for (int i = 0; i < K; ++i) worker_of_slot[me * K + i] = local_worker[i];
    policy_attach(PolicyRun{arb, worker_of_slot, {&cl_plain, &cl_grad}, n, T});
  }
  auto submit = [&](starpu_task* t, int id) {
    int rc = starpu_task_submit(t);
    if (rc != 0) mpi_abort(fmt::format("starpu_task_submit({}) failed ({})", g.label(id), rc));
  };
  // Receives first (each completes a transfer task, so those are submitted
  // before): a message can arrive, and its consumer become ready, at any
  // time from now on, in any order.
  for (auto& [e, a] : recvs) {
    const int m = e / E, c = std::upper_bound(edge_off.begin(), edge_off.end(), e % E) - edge_off.begin() - 1;
    submit(a->task, c);
    const int src = rank_of(g.preds(c).begin()[e % E - edge_off[c]], m);
    if (starpu_mpi_irecv_detached(run.handle[e], src, e, MPI_COMM_WORLD, message_received, a) != 0)
      mpi_abort(fmt::format("starpu_mpi_irecv_detached for {} failed", g.label(c)));
  }
  for (int d = 0; d < static_cast<int>(run.dec.size()); ++d)
    for (int k = 0; k < static_cast<int>(run.dec[d].in_h.size()); ++k) {
      dec_args.push_back(std::make_unique<DecisionArg>(DecisionArg{&run, d, k}));
      if (starpu_mpi_irecv_detached(run.dec[d].in_h[k], (d * T) / K, kDecisionTags + std::int64_t{d} * n + k,
                                    MPI_COMM_WORLD, decision_received, dec_args.back().get()) != 0)
        mpi_abort(fmt::format("starpu_mpi_irecv_detached for a decision of device {} failed", d));
    }
  // No starpu_mpi_barrier here: it waits for every submitted task first, and
  // the transfer tasks above wait for messages. Times share one origin anyway.
  const double t0 = run.now();
  for (int id : submit_order)
    for (int m = 0; m < T; ++m) {
      const int mt = m * n + id;
      if (!tasks[mt]) continue;
      for (starpu_task* x : xfers_into[mt])
        if (!recv_x.count(x)) submit(x, id);
      submit(tasks[mt], id);
    }
  for (starpu_task* t : epi_tasks)
    if (starpu_task_submit(t) != 0) mpi_abort("starpu_task_submit(epilogue) failed");

  // Watchdog: any failure or a stall stops every rank.
  {
    std::unique_lock<std::mutex> lk(run.m);
    long last_progress = -1;
    double last_move = run.now(), stall_since = -1;
    while (run.done.load() < n_local) {
      run.cv.wait_for(lk, std::chrono::milliseconds(5));
      if (!run.error.empty()) mpi_abort(run.error);
      const double now = run.now();
      long progress = run.done.load() + run.received.load() + policy_events();
      if (progress != last_progress) last_progress = progress, last_move = now, stall_since = -1;
      if (run.running.load() != 0 || link.busy() != 0) continue;
      const int waiting = expected_msgs - run.received.load();
      std::string why;
      lk.unlock();
      bool stalled = arb && waiting == 0 && policy_stalled(&why);
      lk.lock();
      if (stalled) {
        if (stall_since < 0) stall_since = now;
        else if (now - stall_since >= opt.stall_grace_s)
          mpi_abort(fmt::format("{}: run stalled with {} of {} local tasks done; no device can take a task:\n{}",
                                res.policy, run.done.load(), n_local, why));
      } else if (now - last_move >= timeout_s) {
        mpi_abort(fmt::format("{}: no progress for {:.1f} s with {} of {} local tasks done and {} of {} messages "
                              "still expected from other ranks (a rank died or hangs?)",
                              res.policy, timeout_s, run.done.load(), n_local, waiting, expected_msgs));
      }
    }
  }
  const double wall_local = run.now() - t0;
  starpu_task_wait_for_all();
  starpu_mpi_wait_for_all(MPI_COMM_WORLD);  // our sends have left
  if (arb) policy_detach();
  for (int mt = 0; mt < n * T; ++mt) {
    if (tasks[mt]) starpu_task_destroy(tasks[mt]);
    for (starpu_task* x : xfers_into[mt]) starpu_task_destroy(x);
  }
  for (starpu_task* t : epi_tasks) starpu_task_destroy(t);
  unregister_all(grad_h);
  for (auto h : run.handle)
    if (h) starpu_data_unregister(h);
  for (Decisions& dc : run.dec) {
    for (auto h : dc.out_h) starpu_data_unregister(h);
    for (auto h : dc.in_h) starpu_data_unregister(h);
  }
  if (mopt.tp_comm) mopt.tp_comm->close();
  session.reset();
  struct Rec {
    double id, start, end, worker, pos;
  };
  // One time origin for all ranks: the earliest local start. steady_clock
  // is CLOCK_MONOTONIC, shared by the processes of one host.
  double t_origin = t0;
  MPI_Allreduce(&t0, &t_origin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
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
  // Every rank gets the merged run (doubles: five per task), so callers
  // compute the same statistics everywhere and only printing is rank 0's.
  int count = static_cast<int>(mine.size() * 5);
  std::vector<int> counts(R), displs(R);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < R; ++r) displs[r] = total, total += counts[r];
  std::vector<double> all(total);
  MPI_Allgatherv(reinterpret_cast<double*>(mine.data()), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  double wall = 0;
  MPI_Allreduce(&wall_local, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

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
  if (run.epilogue) {  // this rank's stages only (global worker ids, as for tasks)
    res.epilogue_worker.assign(S * T, -1);
    res.epilogue_start_s.assign(S * T, -1);
    res.epilogue_end_s.assign(S * T, -1);
    for (int i = 0; i < S * T; ++i) {
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

Executor mpi_executor(const MpiOptions& mopt) {
  return [mopt](const Hint& h, const std::function<void(int)>& body, const ExecOptions& o) {
    return execute_mpi(h, body, o, mopt).exec;
  };
}

}  // namespace rrfp
