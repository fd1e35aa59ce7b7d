#include "runtime/graph_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include <fmt/format.h>

#include "hints/replay.hpp"
#include "runtime/codelets.hpp"
#include "runtime/data_plan.hpp"
#include "runtime/link_thread.hpp"
#include "runtime/starpu_tasks.hpp"
#include "runtime/submission.hpp"
#include "runtime/task_bodies.hpp"
#include "sched/rrfp_sched.h"

namespace rrfp {

namespace {

starpu_data_access_mode mode_of(Access a) {
  switch (a) {
    case Access::R: return STARPU_R;
    case Access::W: return STARPU_W;
    case Access::RW: return STARPU_RW;
    case Access::RWCommute: return static_cast<starpu_data_access_mode>(STARPU_RW | STARPU_COMMUTE);
  }
  return STARPU_RW;
}

}  // namespace

// --- The submitter.

GraphRunOutcome run_graph(const GraphRunSpec& spec) {
  const Hint& hint = *spec.hint;
  const ExecOptions& opt = *spec.opt;
  const RankLayout& L = spec.layout;
  const TaskGraph& g = *hint.graph;
  const int n = g.size(), T = opt.tensor_parallel, me = L.rank;
  const PolicyChoice::Kind kind = spec.choice->kind;
  const bool strict = kind == PolicyChoice::Kind::RrfpFixed || kind == PolicyChoice::Kind::StaticOrder;
  if (opt.message_bytes < 1) throw SpecError("message handles need at least one byte");

  auto sub = std::make_unique<Submission>();
  RunState& run = *sub->run;
  run.g = &g;
  run.n = n;
  run.tp = T;
  run.workload_key = opt.workload_key;
  run.body = spec.body;
  run.epilogue = opt.stage_epilogue ? &opt.stage_epilogue : nullptr;
  run.install = opt.stage_install ? &opt.stage_install : nullptr;
  run.hook = opt.task_hook ? &opt.task_hook : nullptr;
  run.link = &sub->link;

  // Accumulators in plain RW under strict policies: StarPU acquires a
  // handle when a task becomes ready, before the policy sees it, so a W/BW
  // whose turn has not come would hold a COMMUTE handle and block the one
  // whose turn it is (seen with dualpipev). Submitting in hint order makes
  // the plain-RW order the one they follow anyway.
  DataPlanOptions po;
  po.tensor_parallel = T;
  po.commute = !strict;
  po.epilogues = run.epilogue != nullptr;
  po.epilogue_group = opt.epilogue_group;
  po.gate_lag = opt.gate_lag;
  po.forward_window = opt.forward_window;
  po.message_bytes = opt.message_bytes;
  po.link_delay_s = opt.link_delay_s;
  po.state_bytes = opt.state_bytes;
  po.accumulator_device = opt.accumulator_device;
  MessageChannels* channels = L.transport ? L.transport->channels() : nullptr;
  if (channels) po.channel_rank = [&L](int slot) { return L.rank_of_slot(slot); };
  sub->plan = plan_data(g, po);
  const DataPlan& plan = sub->plan;
  const int tasks = plan.tasks(), links = static_cast<int>(plan.links.size()), epis = plan.epilogues;
  if (plan.installs() > 0 && !run.install) throw SpecError("state bytes with a gate need ExecOptions::stage_install");
  run.size_records(epis + plan.installs());
  const unsigned ctx = RRFP_INITIAL_SCHED_CTX;
  if (spec.arb) {  // the run's configuration, for the rrfp policies (sched/rrfp_sched.h)
    const std::vector<const starpu_codelet*> cls = pass_codelets();
    // An update is owed by counting only where all of its stage's W/BW
    // and the update itself run on this rank.
    std::vector<unsigned char> counted(g.spec().stages, 1);
    for (int s = 0; s < g.spec().stages; ++s) counted[s] = L.rank_of_slot(g.spec().device_of(s, 0) * T) == me;
    for (int id = 0; id < n; ++id)
      if (const Task& t = g.task(id); (t.kind == Kind::W || t.kind == Kind::BW) && L.rank_of_slot(t.device * T) != me)
        counted[t.stage] = 0;
    const rrfp_sched_config cfg{spec.arb, spec.worker_of_slot.data(), static_cast<int>(spec.worker_of_slot.size()),
                                cls.data(), static_cast<int>(cls.size()), n, T, opt.epilogue_group, epilogue_codelet(),
                                counted.data(), install_codelet()};
    char err[256];
    if (rrfp_sched_attach(ctx, &cfg, err, sizeof err) != 0) throw SpecError(fmt::format("{}: {}", spec.choice->name, err));
  }

  // Which nodes this rank builds (runs them, or owns data they read) and
  // which handles it therefore touches.
  auto rank_of_handle = [&](int h) { return L.rank_of_slot(plan.handles[h].slot); };
  auto is_link = [&](int node) { return node >= tasks && node < tasks + links; };
  // Links and a channel's tasks are held until their wire is done, run
  // on any worker here and are not counted as the run's work.
  auto is_held = [&](int node) { return is_link(node) || plan.is_channel_node(node); };
  std::vector<unsigned char> build(plan.nodes(), 0), touched(plan.handles.size(), 0);
  for (int node = 0; node < plan.nodes(); ++node) {
    bool b = L.rank_of_slot(plan.slot[node]) == me;
    for (const AccessSpec& a : plan.access[node]) b = b || rank_of_handle(a.handle) == me;
    build[node] = b;
    if (b)
      for (const AccessSpec& a : plan.access[node]) touched[a.handle] = 1;
  }
  // State bytes (an accumulator, a version) are written many times: a rank
  // that receives them also submits every task writing them, so that
  // StarPU-MPI's cache drops its copy when the owner's changes.
  auto rewritten = [&](const AccessSpec& a) {
    const HandleSpec& h = plan.handles[a.handle];
    return a.mode != Access::R && touched[a.handle] && rank_of_handle(a.handle) != me && h.vector &&
           (h.kind == HandleKind::Accumulator || h.kind == HandleKind::Version);
  };
  std::vector<int> also;
  for (int node = 0; node < plan.nodes(); ++node)
    if (!build[node] && std::any_of(plan.access[node].begin(), plan.access[node].end(), rewritten)) also.push_back(node);
  for (int node : also) {
    build[node] = 1;
    for (const AccessSpec& a : plan.access[node]) touched[a.handle] = 1;
  }
  register_handles(*sub, L, touched);

  GraphRunOutcome out;
  for (int mt = 0; mt < tasks; ++mt)
    if (plan.msg_in[mt] >= 0) {
      // The message itself (through a channel, the consumer reads a copy).
      const int c = plan.channel_in[mt], msg = c >= 0 ? plan.channels[c].message : plan.msg_in[mt];
      const int from = plan.handles[msg].slot / T, to = g.task(mt % n).device;
      if (from != to && mt < n) ++out.transfers;
      if (L.rank_of_slot(plan.handles[msg].slot) != L.rank_of_slot(plan.slot[mt])) ++out.rank_messages;
    }
  for (auto h : sub->handle) out.data_handles += h != nullptr;

  if (L.transport && T > 1 && spec.arb) {
    sub->decisions = L.transport->decisions(hint, T, L.slots_per_rank, me);
    if (sub->decisions->active()) run.decisions = sub->decisions.get();
  }
  const int D = hint.devices();
  for (int slot = 0; slot < D * T; ++slot) {
    const int w = spec.worker_of_slot[slot];
    sub->place.emplace_back(w == RRFP_REMOTE_WORKER ? 0 : w, kind == PolicyChoice::Kind::StaticOrder);
  }

  sub->args.resize(tasks);
  sub->link_args.resize(links);
  sub->epi_args.resize(epis + plan.installs());
  sub->tasks.assign(plan.nodes(), nullptr);
  sub->arrival_args = std::make_unique<ArrivalArg[]>(plan.nodes());
  int expected_remote = 0;
  // After a failed submission nothing more is submitted: a consumer would
  // read what the task never wrote. What was not submitted counts as done,
  // so the watchdog's drain ends the run with the error instead of waiting.
  bool submit_failed = false;
  int not_submitted = 0;
  auto counted = [&](int node) { return L.rank_of_slot(plan.slot[node]) == me && !is_held(node); };
  // Builds node `node` (a task here, or the transport's sends for it) and submits it.
  auto submit = [&](int node, starpu_codelet* cl, void* arg, int priority, unsigned order) {
    if (!build[node]) return;
    if (submit_failed) {
      not_submitted += counted(node);
      return;
    }
    const auto& acc = plan.access[node];
    std::vector<starpu_data_descr> descr(acc.size());  // an epilogue may have more than STARPU_NMAXBUFS
    for (size_t i = 0; i < acc.size(); ++i) descr[i] = {sub->handle[acc[i].handle], mode_of(acc[i].mode)};
    const int nb = static_cast<int>(acc.size()), slot = plan.slot[node], where = L.rank_of_slot(slot);
    starpu_task* t = L.transport ? L.transport->build(cl, descr.data(), nb, where)
                                 : starpu_task_build(cl, STARPU_DATA_MODE_ARRAY, descr.data(), nb, 0);
    if (t) {
      // StarPU-MPI's task_build marks its args as owned by the task: ours are not.
      t->cl_arg_free = t->callback_arg_free = t->prologue_callback_arg_free = t->prologue_callback_pop_arg_free = 0;
      t->cl_arg = arg;
      t->name = cl->name;  // the builders name it after themselves; traces should show rrfp_F, ...
      t->destroy = 0;
      t->priority = priority;
      if (!is_held(node)) sub->place[slot].place(t, order);  // links, channels: any worker here
      if (!is_held(node)) {  // a pass or an epilogue: its end, before StarPU releases its dependents
        t->epilogue_callback_func = node < tasks ? pass_ended : epilogue_ended;
        t->epilogue_callback_arg = arg;
      }
      if (is_link(node)) {
        sub->link_args[node - tasks].task = t;
        starpu_task_end_dep_add(t, 1);  // released by the link thread after the delay
      }
      if (plan.is_channel_node(node)) {
        sub->channel_args[node - plan.send_node(0)].task = t;
        starpu_task_end_dep_add(t, 1);  // released when the channel has moved the bytes
        if (!sub->channel_mask.empty()) {
          t->workerids = sub->channel_mask.data();
          t->workerids_len = static_cast<unsigned>(sub->channel_mask.size());
        }
      }
      // A message from another rank: the watchdog counts its arrival.
      for (const AccessSpec& a : acc)
        if (a.mode == Access::R && rank_of_handle(a.handle) != me &&
            (plan.handles[a.handle].kind == HandleKind::Activation || plan.handles[a.handle].kind == HandleKind::Gradient)) {
          sub->arrival_args[node].run = &run;
          sub->arrival_args[node].handle = a.handle;
          t->prologue_callback_func = input_arrived;
          t->prologue_callback_arg = &sub->arrival_args[node];
          ++expected_remote;
          break;
        }
      sub->tasks[node] = t;
      if (int rc = starpu_task_submit(t); rc != 0) {
        submit_failed = true;
        not_submitted += counted(node);
        run.fail(fmt::format("starpu_task_submit({}) failed ({})", cl->name, rc));
        return;
      }
    }
    if (L.transport) L.transport->post_build(cl, descr.data(), nb, where);
  };

  for (int mt = 0; mt < tasks; ++mt) {
    const Task& t = g.task(mt % n);
    TaskArg& a = sub->args[mt];
    a.id = mt % n;
    a.owner = &run;
    a.member = mt / n;
    a.stage = t.stage;
    a.message_bytes = opt.message_bytes;
    for (size_t i = 0; i < plan.access[mt].size(); ++i) {
      if (plan.access[mt][i].handle == plan.msg_in[mt]) a.in_buf = static_cast<int>(i);
      if (plan.access[mt][i].handle == plan.msg_out[mt]) a.out_buf = static_cast<int>(i);
      const HandleSpec& h = plan.handles[plan.access[mt][i].handle];
      if (h.vector && h.kind == HandleKind::Accumulator) a.acc_buf = static_cast<int>(i);
      if (h.vector && h.kind == HandleKind::Version) a.version_buf = static_cast<int>(i);
    }
  }
  for (int l = 0; l < links; ++l) sub->link_args[l] = {&run, nullptr, plan.links[l].delay_s};
  // Channels: the messages this rank sends to and receives from each rank.
  std::vector<int> sends_to(L.ranks, 0), receives_from(L.ranks, 0);
  sub->channel_args.resize(2 * plan.channels.size());
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const ChannelSpec& cs = plan.channels[c];
    const std::int64_t msg = cs.message + 1;  // the handle's tag, the same on every rank
    sub->channel_args[2 * c] = {channels, nullptr, cs.dst_rank, msg, true};
    sub->channel_args[2 * c + 1] = {channels, nullptr, cs.src_rank, msg, false};
    if (cs.src_rank == me) ++sends_to[cs.dst_rank];
    if (cs.dst_rank == me) {
      ++receives_from[cs.src_rank];
      const int node = plan.receive_node(static_cast<int>(c));
      sub->arrival_args[node].run = &run;
      sub->arrival_args[node].handle = cs.message;
      sub->channel_args[2 * c + 1].arrived = input_arrived;
      sub->channel_args[2 * c + 1].arrival = &sub->arrival_args[node];
      ++expected_remote;
    }
  }
  for (int w : spec.channel_workers) {
    if (sub->channel_mask.size() <= static_cast<size_t>(w / 32)) sub->channel_mask.resize(w / 32 + 1, 0);
    sub->channel_mask[w / 32] |= 1u << (w % 32);
  }
  if (channels) channels->start(sends_to, receives_from, spec.timeout_s);
  for (int e = 0; e < epis; ++e) sub->epi_args[e] = {e, &run, &sub->plan, plan.epilogue_node(e)};
  for (int i = 0; i < plan.installs(); ++i)
    sub->epi_args[epis + i] = {epis + i, &run, &sub->plan, plan.install_node(i), plan.install_epilogue[i],
                               plan.install_device[i]};

  std::vector<int> submit_order = strict ? strict_submission_order(hint) : std::vector<int>{};
  if (submit_order.empty()) submit_order = g.topological_order(plan.window_edges);
  // Every task is known before the first one can run on this rank: the
  // watchdog's total must be complete before a fast run could end.
  for (int node = 0; node < plan.nodes(); ++node)
    if (build[node] && counted(node)) ++run.total;
  if (sub->decisions) sub->decisions->post_receives();
  if (!L.distributed()) run.t0 = RunState::Clock::now();  // one process: times from submission; ranks share the clock's epoch
  out.t_submit = run.now();
  for (int node : submission_nodes(plan, std::move(submit_order))) {
    if (node < tasks) {
      const int id = node % n;
      const IterationMark mark(opt.iteration, g.task(id).mb);
      submit(node, pass_codelet(g.task(id).kind), &sub->args[node], -hint.rank[id], static_cast<unsigned>(hint.rank[id] + 1));
    } else if (is_link(node)) {
      submit(node, link_codelet(), &sub->link_args[node - tasks], 0, 0);
    } else if (plan.is_channel_node(node)) {
      const int i = node - plan.send_node(0);
      // Top priority: the rrfp policies run it before the device's next pass.
      submit(node, i % 2 == 0 ? channel_send_codelet() : channel_receive_codelet(), &sub->channel_args[i],
             STARPU_MAX_PRIO, 0);
    } else {
      // Grouped (an asynchronous stage's update, or an install of its
      // weights): the rrfp policies run it before its device's next pass
      // once pushed (rrfp_sched_config::update_group).
      submit(node, node < plan.install_node(0) ? epilogue_codelet() : install_codelet(),
             &sub->epi_args[node - tasks - links], 0, 0);
    }
  }
  for (int i = 0; i < not_submitted; ++i) run.finished_one();
  IterationMark::clear();
  const int expected_msgs = expected_remote + (sub->decisions ? sub->decisions->expected() : 0);
  auto arrived = [&] { return run.arrived.load() + (sub->decisions ? sub->decisions->received() : 0); };

  // Names the messages from other ranks that have not arrived (at most 8).
  auto missing_messages = [&] {
    std::string out;
    int listed = 0;
    for (int node = 0; node < plan.nodes() && listed < 8; ++node) {
      const int h = sub->arrival_args[node].handle;
      if (h < 0 || sub->arrival_args[node].fired.load()) continue;
      const HandleSpec& hs = plan.handles[h];
      const int reader = plan.is_channel_node(node) ? plan.channels[(node - plan.send_node(0)) / 2].consumer : node;
      const std::string who = reader < tasks ? member_task_name(g.label(reader % n), reader / n, T)
                                             : fmt::format("link node {}", node);
      const char* through = plan.is_channel_node(node) ? " (ordered channel)" : "";
      out += fmt::format("\n  {} waits for {}(stage {}, mb {}, member {}) from rank {}{}", who,
                         handle_kind_name(hs.kind), hs.stage, hs.mb, hs.member, rank_of_handle(h), through);
      ++listed;
    }
    return out;
  };
  // The watchdog: the first failure or a stall stops the run.
  std::string failure;
  bool drained = true;
  std::string why(8192, '\0');  // the arbiter's description of a stall
  {
    std::unique_lock<std::mutex> lk(run.m);
    long last_progress = -1;
    double last_move = run.now(), stall_since = -1, abort_at = -1;
    auto abort_run = [&](std::string why) {
      if (failure.empty()) failure = std::move(why);
      run.abort = true;
      abort_at = run.now();
      lk.unlock();
      if (spec.arb) rrfp_sched_drain(ctx);
      sub->link.flush();
      lk.lock();
    };
    while (run.done.load() < run.total) {
      run.cv.wait_for(lk, std::chrono::milliseconds(5));
      const double now = run.now();
      if (run.abort) {
        if (L.distributed() || now - abort_at > 30 + spec.timeout_s) {
          drained = false;  // other ranks wait for us, or tasks are stuck in StarPU
          break;
        }
        continue;
      }
      if (!run.error.empty()) {
        abort_run(run.error);
        continue;
      }
      if (channels && !channels->error().empty()) {
        abort_run(channels->error());
        continue;
      }
      const long progress = run.done.load() + arrived() + rrfp_sched_events(ctx);
      if (progress != last_progress) last_progress = progress, last_move = now, stall_since = -1;
      if (run.running.load() != 0 || sub->link.busy() != 0) continue;
      lk.unlock();
      const bool stalled = spec.arb && arrived() == expected_msgs && rrfp_sched_stalled(ctx, why.data(), why.size());
      lk.lock();
      if (stalled) {
        if (stall_since < 0) stall_since = now;
        else if (now - stall_since >= opt.stall_grace_s)
          abort_run(fmt::format("{}: run stalled with {} of {} tasks done; no device can take a task:\n{}",
                                spec.choice->name, std::min(run.done.load(), run.total), run.total, why.c_str()));
      } else if (now - last_move >= spec.timeout_s) {
        abort_run(L.distributed() ? fmt::format("{}: no progress for {:.1f} s with {} of {} local tasks done and {} of {} "
                                      "messages still expected from other ranks (a rank died or hangs?){}",
                                      spec.choice->name, spec.timeout_s, run.done.load(), run.total,
                                      expected_msgs - arrived(), expected_msgs, missing_messages())
                        : fmt::format("{}: no progress for {:.1f} s with {} of {} tasks done (stalled)",
                                      spec.choice->name, spec.timeout_s, run.done.load(), run.total));
      }
    }
    // A failure just before the last task ended, or before this loop began.
    if (failure.empty() && !run.error.empty()) failure = run.error;
  }
  if (channels && failure.empty() && !channels->error().empty()) failure = channels->error();
  if (!drained) {
    (void)sub.release();  // StarPU still points into it
    throw UnrecoverableError(failure);
  }
  out.wall_s = run.now() - out.t_submit;
  starpu_task_wait_for_all();
  if (channels) channels->finish();
  if (L.transport) L.transport->wait_sends();
  if (spec.arb) rrfp_sched_detach(ctx);
  if (opt.profile) {
    run.prof_start.assign(tasks, -1);
    run.prof_end.assign(tasks, -1);
    for (int mt = 0; mt < tasks; ++mt)
      if (sub->tasks[mt] && sub->tasks[mt]->profiling_info) {
        run.prof_start[mt] = starpu_timing_timespec_to_us(&sub->tasks[mt]->profiling_info->start_time);
        run.prof_end[mt] = starpu_timing_timespec_to_us(&sub->tasks[mt]->profiling_info->end_time);
      }
  }
  for (starpu_task* t : sub->tasks)
    if (t) starpu_task_destroy(t);
  sub->decisions.reset();
  unregister_all(sub->handle);
  if (!failure.empty()) throw ExecError(failure);
  out.run = std::move(sub->run);
  return out;
}

}  // namespace rrfp
