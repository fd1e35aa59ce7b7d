#include "runtime/executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <starpu.h>

#include "hints/replay.hpp"
#include "runtime/link_thread.hpp"
#include "runtime/run_plan.hpp"
#include "runtime/run_state.hpp"
#include "runtime/run_stats.hpp"
#include "runtime/session.hpp"
#include "runtime/starpu_tasks.hpp"
#include "sched/arbiter.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {

namespace {

using Clock = std::chrono::steady_clock;

void graph_task_body(void** /*buffers*/, void* cl_arg) {
  auto* a = static_cast<GraphTaskArg*>(cl_arg);
  RunState* r = static_cast<RunState*>(a->owner);
  const int id = a->id, mt = a->member * r->n + id, w = starpu_worker_get_id();
  r->worker[mt] = w;
  r->by_worker[w].push_back(id);
  r->running.fetch_add(1);
  r->start[mt] = r->now();
  if (!r->abort.load()) {  // an aborted run drains without doing work
    std::string err = run_guarded([&] { (*r->body)(mt); }, "task " + member_task_name(r->g->label(id), a->member, r->tp));
    if (!err.empty()) r->fail(std::move(err));
  }
  r->end[mt] = r->now();
  r->running.fetch_sub(1);
  r->finished_one();
}

}  // namespace

int inflight_slack_from_env(int fallback) {
  const char* s = std::getenv("RRFP_INFLIGHT_SLACK");
  if (!s || !*s) return fallback;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (*end || v < 0 || v > 1000000) throw SpecError(fmt::format("RRFP_INFLIGHT_SLACK='{}' is not a non-negative integer", s));
  return static_cast<int>(v);
}

void prepare_session(const Hint& hint, const ExecOptions& opt) {
  const int slots = hint.devices() * opt.tensor_parallel;
  if (slots <= max_cpu_workers())
    StarpuSession::reuse(resolve_policy(opt.policy), slots, opt.profile).init_workers_once(opt.worker_init);
}

ExecResult execute(const Hint& hint, const std::function<void(int)>& body, const ExecOptions& opt) {
  const TaskGraph& g = *hint.graph;
  const int n = g.size(), D = hint.devices(), T = opt.tensor_parallel, S = g.spec().stages;
  RunPlan plan = plan_run(hint, opt);
  const PolicyChoice& choice = plan.choice;
  Arbiter* arb = plan.arb.get();
  if (D * T > max_cpu_workers())
    throw SpecError(fmt::format("the hint needs {} devices{} but StarPU here has at most {} CPU workers", D * T,
                                T > 1 ? fmt::format(" ({} x {} tensor-parallel)", D, T) : "", max_cpu_workers()));

  StarpuSession& session = StarpuSession::reuse(choice, D * T, opt.profile);
  session.init_workers_once(opt.worker_init);
  ExecResult res;
  res.policy = choice.name;
  res.devices = D;
  res.tasks = n;
  res.tensor_parallel = T;
  // Slot d*T+t is member t of device d; T = 1: slot = device.
  for (int slot = 0; slot < D * T; ++slot) res.member_worker.push_back(session.worker_of_device(slot));
  for (int d = 0; d < D; ++d) res.device_worker.push_back(res.member_worker[d * T]);

  RunState run;  // total = graph tasks + epilogue tasks
  run.g = &g;
  run.n = n;
  run.tp = T;
  run.body = &body;
  const bool with_epilogue = static_cast<bool>(opt.stage_epilogue);
  run.epilogue = with_epilogue ? &opt.stage_epilogue : nullptr;
  run.total = n * T + (with_epilogue ? S * T : 0);
  run.size_records(S * T);
  LinkThread link;
  run.link = &link;

  // Per-stage gradient buffers written by W/BW. StarPU acquires a handle
  // when a task becomes ready, before the policy sees it, so under a strict
  // order a W/BW whose turn has not come would hold a COMMUTE handle and
  // block the one whose turn it is (a deadlock seen with dualpipev). Strict
  // policies therefore use plain RW and submit in hint order, so the implicit
  // data dependencies agree with the order they follow anyway; the others
  // accumulate in any order (RW | COMMUTE). One buffer per stage and member.
  const bool strict = choice.kind == PolicyChoice::Kind::RrfpFixed || choice.kind == PolicyChoice::Kind::StaticOrder;
  std::vector<int> submit_order = strict ? strict_submission_order(hint) : std::vector<int>{};
  if (submit_order.empty()) submit_order = g.topological_order();
  starpu_codelet cl_plain = graph_codelet(graph_task_body, false, false, "rrfp_task");
  starpu_codelet cl_grad = graph_codelet(graph_task_body, true, !strict, "rrfp_wgrad");
  std::vector<double> grad(S * T, 0.0);
  const std::vector<starpu_data_handle_t> grad_h = register_variables(grad);  // index member * S + stage
  std::vector<WorkerPlacement> place;
  for (int slot = 0; slot < D * T; ++slot)
    place.emplace_back(res.member_worker[slot], choice.kind == PolicyChoice::Kind::StaticOrder);
  // Member task mt = t*n + id: graph task id as run by member t.
  std::vector<GraphTaskArg> args(n * T);
  std::vector<starpu_task*> tasks(n * T);
  for (int mt = 0; mt < n * T; ++mt) {
    const int id = mt % n, member = mt / n;
    const Task& t = g.task(id);
    const int slot = t.device * T + member;
    bool wgrad = t.kind == Kind::W || t.kind == Kind::BW;
    starpu_task* st = starpu_task_create();
    st->cl = wgrad ? &cl_grad : &cl_plain;
    if (wgrad) st->handles[0] = grad_h[member * S + t.stage];
    args[mt] = {id, &run, member};
    st->cl_arg = &args[mt];
    st->destroy = 0;
    st->priority = -hint.rank[id];  // prio/dmda: better rank first
    place[slot].place(st, static_cast<unsigned>(hint.rank[id] + 1));
    tasks[mt] = st;
  }
  // Dependencies, member by member; transfers for edges across devices.
  std::vector<std::unique_ptr<TransferArg>> xfer_args;
  std::vector<std::vector<starpu_task*>> xfers_into(n * T);
  std::vector<starpu_task*> deps;
  for (int mt = 0; mt < n * T; ++mt) {
    const int id = mt % n, base = mt - id;
    deps.clear();
    int k = 0;
    for (int p : g.preds(id)) {
      if (g.task(p).device == g.task(id).device) {
        deps.push_back(tasks[base + p]);
      } else {
        starpu_task* x = starpu_task_create();
        x->cl = nullptr;
        x->destroy = 0;
        starpu_task_declare_deps_array(x, 1, &tasks[base + p]);
        double delay = opt.link_delay_s ? opt.link_delay_s(id, k) : 0.0;
        if (delay > 0) {
          xfer_args.push_back(std::make_unique<TransferArg>(TransferArg{&run, x, delay}));
          starpu_task_end_dep_add(x, 1);
          x->prologue_callback_pop_func = transfer_started;
          x->prologue_callback_pop_arg = xfer_args.back().get();
        }
        xfers_into[mt].push_back(x);
        deps.push_back(x);
      }
      ++k;
    }
    if (!deps.empty()) starpu_task_declare_deps_array(tasks[mt], static_cast<unsigned>(deps.size()), deps.data());
  }
  for (int id = 0; id < n; ++id) res.transfers += static_cast<int>(xfers_into[id].size());

  // Epilogues: one task per model stage (and member) on the device holding
  // it, ordered after the stage's W/BW tasks by StarPU's implicit data
  // dependencies (plain RW on the gradient handle, submitted last). They are
  // not graph tasks: the rrfp policies hand them out from their FIFO of other
  // tasks (as StarPU's built-ins do, restricted by workerids); static-order
  // pins them to the worker without a workerorder, so they need no slot in
  // its order.
  starpu_codelet cl_epi = epilogue_codelet(epilogue_body, "rrfp_epilogue");
  std::vector<EpilogueArg> epi_args;
  std::vector<starpu_task*> epi_tasks;
  if (with_epilogue)
    for (int i = 0; i < S * T; ++i) epi_args.push_back({i, &run});
  for (int i = 0; i < static_cast<int>(epi_args.size()); ++i) {
    const int slot = g.spec().device_of(i % S, 0) * T + i / S;
    starpu_task* st = starpu_task_create();
    st->cl = &cl_epi;
    st->handles[0] = grad_h[i];  // grad_h is indexed member * S + stage too
    st->cl_arg = &epi_args[i];
    st->destroy = 0;
    place[slot].place(st);
    epi_tasks.push_back(st);
  }

  if (arb) policy_attach(PolicyRun{arb, res.member_worker, {&cl_plain, &cl_grad}, n, T});
  run.t0 = Clock::now();
  auto submit = [&](starpu_task* t, int id) {
    int rc = starpu_task_submit(t);
    if (rc != 0) {
      fmt::print(stderr, "rrfp: starpu_task_submit({}) failed ({})\n", g.label(id), rc);
      std::_Exit(3);  // half a graph submitted: nothing can be unwound safely
    }
  };
  for (int id : submit_order)
    for (int member = 0; member < T; ++member) {
      for (starpu_task* x : xfers_into[member * n + id]) submit(x, id);
      submit(tasks[member * n + id], id);
    }
  for (starpu_task* t : epi_tasks)
    if (int rc = starpu_task_submit(t); rc != 0) {
      fmt::print(stderr, "rrfp: starpu_task_submit(epilogue) failed ({})\n", rc);
      std::_Exit(3);
    }

  // Watchdog: wait for the bodies, stop the run on a failure or a stall.
  std::string failure;
  {
    std::unique_lock<std::mutex> lk(run.m);
    int last_done = -1;
    long last_events = -1;
    double last_move = 0, stall_since = -1, abort_at = -1;
    auto abort_run = [&](std::string why) {
      if (failure.empty()) failure = std::move(why);
      run.abort = true;
      abort_at = run.now();
      lk.unlock();
      if (arb) policy_drain();
      link.flush();
      lk.lock();
    };
    while (run.done.load() < run.total) {
      run.cv.wait_for(lk, std::chrono::milliseconds(5));
      double now = run.now();
      if (run.abort) {
        if (now - abort_at > 30 + opt.stall_timeout_s) {
          fmt::print(stderr, "rrfp: run did not drain after: {}\n", failure);
          std::_Exit(3);  // StarPU cannot shut down with tasks stuck in it
        }
        continue;
      }
      if (!run.error.empty()) {
        abort_run(run.error);
        continue;
      }
      int done = run.done.load();
      long ev = policy_events();
      if (done != last_done || ev != last_events) {
        last_done = done, last_events = ev, last_move = now, stall_since = -1;
      }
      bool idle = run.running.load() == 0 && link.busy() == 0;
      if (!idle) continue;
      std::string why;
      lk.unlock();
      bool stalled = arb && policy_stalled(&why);
      lk.lock();
      if (stalled) {
        if (stall_since < 0) stall_since = now;
        else if (now - stall_since >= opt.stall_grace_s)
          abort_run(fmt::format("{}: run stalled with {} of {} tasks done; no device can take a task:\n{}", res.policy,
                                std::min(done, n * T), n * T, why));
      } else if (now - last_move >= opt.stall_timeout_s) {
        abort_run(fmt::format("{}: no progress for {:.1f} s with {} of {} tasks done (stalled)", res.policy,
                              opt.stall_timeout_s, done, run.total));
      }
    }
  }
  res.wall_s = run.now();
  starpu_task_wait_for_all();
  if (arb) policy_detach();

  if (opt.profile) {
    res.prof_start_s.assign(n, -1);
    res.prof_end_s.assign(n, -1);
    double t0 = 1e300;
    for (int id = 0; id < n; ++id)
      if (auto* info = tasks[id]->profiling_info) t0 = std::min(t0, starpu_timing_timespec_to_us(&info->start_time));
    for (int id = 0; id < n; ++id)
      if (auto* info = tasks[id]->profiling_info) {
        res.prof_start_s[id] = (starpu_timing_timespec_to_us(&info->start_time) - t0) * 1e-6;
        res.prof_end_s[id] = (starpu_timing_timespec_to_us(&info->end_time) - t0) * 1e-6;
      }
  }
  for (starpu_task* t : tasks) starpu_task_destroy(t);
  for (starpu_task* t : epi_tasks) starpu_task_destroy(t);
  for (auto& v : xfers_into)
    for (starpu_task* x : v) starpu_task_destroy(x);
  unregister_all(grad_h);
  // StarPU's workerorder counter lives as long as the session and must grow
  // across runs, so a static-order run does not leave its session for the next.
  if (choice.kind == PolicyChoice::Kind::StaticOrder) StarpuSession::close_reused();
  if (!failure.empty()) {
    StarpuSession::close_reused();  // a drained run leaves nothing worth keeping
    throw ExecError(failure);
  }

  // The leader's times stand for the task (the arbiter counts in-flight
  // work on the leader; followers trail it by a collective's wake-up).
  res.start_s.assign(run.start.begin(), run.start.begin() + n);
  res.end_s.assign(run.end.begin(), run.end.begin() + n);
  res.worker.assign(run.worker.begin(), run.worker.begin() + n);
  if (with_epilogue) {
    res.epilogue_worker = std::move(run.epi_worker);
    res.epilogue_start_s = std::move(run.epi_start);
    res.epilogue_end_s = std::move(run.epi_end);
  }
  res.order.resize(D);
  for (int d = 0; d < D; ++d) res.order[d] = run.by_worker[res.device_worker[d]];
  for (int slot = 0; slot < D * T; ++slot) res.member_order.push_back(run.by_worker[res.member_worker[slot]]);
  res.inflight_cap = plan.inflight_caps(hint, opt);
  fill_run_stats(g, res);
  return res;
}

}  // namespace rrfp
