#include "sched/rrfp_policy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>

#include <fmt/format.h>
#include <sched.h>

// Idle workers must poll pop_task: a leader's decision for its followers,
// a finished task and the bounded wait's deadline make a task poppable
// without a push, and nothing here wakes a sleeping worker for them.
#ifndef STARPU_NON_BLOCKING_DRIVERS
#error "the rrfp policies need StarPU's non-blocking drivers (StarPU 1.4's default; this one was configured with --enable-blocking-drivers)"
#endif

namespace rrfp {

namespace {

constexpr int kMaxDevices = 64;

struct State {
  explicit State(Mode md) : mode(md) {
    for (auto& d : slot_of_worker) d.store(-1);
    for (auto& x : maybe) x.store(0);
    for (auto& x : wake_us) x.store(0);
  }
  const Mode mode;  // the policy's own: rrfp is ReadinessFirst, rrfp-fixed Strict
  std::mutex m;
  std::vector<const starpu_codelet*> codelets;  // graph tasks use these
  std::vector<int> worker_of_slot;               // per slot, RRFP_REMOTE_WORKER on another rank
  Arbiter* arb = nullptr;  // null: no run attached
  // Draining, the policy never reads the arbiter or its hint: after a failed
  // run between ranks they are gone while StarPU still pushes and ends the
  // run's tasks (which skip their work) until the process aborts.
  bool drain = false;
  std::vector<int> device_of;  // per graph task, so draining needs no hint
  int tp = 1, n = 0;
  // Indexed by member task, member * n + graph id.
  std::vector<starpu_task*> by_id;
  std::vector<unsigned char> taken;
  // Indexed by slot, device * tp + member.
  std::vector<std::vector<int>> pending;  // member tasks pushed (for drain)
  std::vector<size_t> drain_pos;
  std::vector<std::deque<int>> follow;    // followers: graph ids the leader took, in order
  std::deque<starpu_task*> foreign;
  // Asynchronous stage updates (rrfp_sched_config::update_group): W/BW
  // finished per stage, and per slot the updates it owes before a pass.
  int update_group = 0;
  const starpu_codelet* update_codelet = nullptr;
  const starpu_codelet* install_codelet = nullptr;
  std::vector<int> writes_done, due;
  std::vector<unsigned char> counted;  // per stage (rrfp_sched_config::update_counted)
  // Read without the lock on the idle pop path, so they are atomics: an
  // idle worker must not touch the mutex unless something changed for it.
  std::atomic<int> slot_of_worker[STARPU_NMAXWORKERS];
  std::atomic<int> maybe[kMaxDevices];  // per slot, 1: pop may find a task
  // rrfp-wait: per slot, when (starpu_timing_now, µs) a waiting device must
  // ask the arbiter again; 0 when it is not waiting.
  std::atomic<double> wake_us[kMaxDevices];
  std::atomic<int> foreign_n{0};
  std::atomic<long> events{0};
};

// The arbiter's clock (rrfp-wait reads it): StarPU's, in seconds.
inline double now_s() { return starpu_timing_now() * 1e-6; }

State* state_of(unsigned sched_ctx) { return static_cast<State*>(starpu_sched_ctx_get_policy_data(sched_ctx)); }

// The task's rrfp_graph_task, or null for a task that is not part of the
// attached run.
const rrfp_graph_task* graph_arg(const State& s, const starpu_task* task) {
  if (!s.arb) return nullptr;
  for (const starpu_codelet* cl : s.codelets)
    if (task->cl == cl) return static_cast<const rrfp_graph_task*>(task->cl_arg);
  return nullptr;
}

// A polling worker hands its core over. It may hold its own sched mutex
// here (StarPU's driver calls pop_task so); relaxed, the submitter can push
// to it meanwhile. Unrelaxed, with more workers than cores, a submitter
// that must lock every worker in turn (starpu_execute_on_each_worker) found
// each one descheduled inside its pop: a 24-worker start took 7-57 s.
void yield_relaxed() {
  starpu_worker_relax_on();
  sched_yield();
  starpu_worker_relax_off();
}

void lock_relaxed(State& s) {
  // A worker may call us holding its own sched mutex; relax so that others
  // can wake it while it waits for our lock.
  starpu_worker_relax_on();
  s.m.lock();
  starpu_worker_relax_off();
}

// An asynchronous stage's update (rrfp_sched_config::update_codelet), an
// install of its weights elsewhere (install_codelet), or any task at
// STARPU_MAX_PRIO (a channel's send or receive between ranks: a message
// must not wait for its device to run out of passes). The rrfp policies
// leave the context's priority range at StarPU's default, [0, 0], so
// STARPU_MAX_PRIO is 0 and every foreign task submitted at priority 0 (an
// emulated link, a stage's synchronous update) is urgent too: the
// behaviour every measurement in perf/RESULTS.md ran with.
bool urgent(const State& s, const starpu_task* task) {
  return task->priority == STARPU_MAX_PRIO ||
         (s.update_group > 0 && (task->cl == s.update_codelet || (s.install_codelet && task->cl == s.install_codelet)));
}

int push_task(starpu_task* task) {
  State& s = *state_of(task->sched_ctx);
  lock_relaxed(s);
  if (const rrfp_graph_task* a = graph_arg(s, task)) {
    const int id = a->id, slot = s.device_of[id] * s.tp + a->member;
    s.by_id[a->member * s.n + id] = task;
    s.pending[slot].push_back(a->member * s.n + id);
    if (!s.drain && a->member == 0) s.arb->on_ready(id, now_s());  // followers wait for the leader's decision
    s.events.fetch_add(1, std::memory_order_relaxed);
    s.maybe[slot].store(1, std::memory_order_release);
    starpu_push_task_end(task);  // before unlocking: nobody can pop it yet
    s.m.unlock();
    return 0;
  }
  // Urgent ones (an asynchronous stage's update) go first.
  if (urgent(s, task))
    s.foreign.push_front(task);
  else
    s.foreign.push_back(task);
  s.foreign_n.fetch_add(1, std::memory_order_release);
  // Workers poll (non-blocking drivers): none needs a wake-up, which would
  // make the pusher wait for it to reach a scheduling point (10x slower
  // dispatch in our measurements). Once unlocked a worker may pop, run and
  // free the task.
  starpu_push_task_end(task);
  s.m.unlock();
  return 0;
}

// Member task for `slot` to run now, or -1. Under the lock.
int choose(State& s, int slot) {
  const int dev = slot / s.tp, member = slot % s.tp;
  if (s.drain) {
    auto& p = s.pending[slot];
    size_t& i = s.drain_pos[slot];
    while (i < p.size() && s.taken[p[i]]) ++i;
    return i < p.size() ? p[i] : -1;
  }
  if (member > 0) {  // a follower runs the leader's decisions in order
    auto& q = s.follow[slot];
    if (q.empty() || !s.by_id[member * s.n + q.front()]) return -1;
    int id = q.front();
    q.pop_front();
    return member * s.n + id;
  }
  int id = s.arb->take(dev, now_s());
  // Bounded wait: the idle path looks at the clock and asks again then.
  s.wake_us[slot].store(id < 0 && s.arb->wake_at(dev) >= 0 ? s.arb->wake_at(dev) * 1e6 : 0, std::memory_order_release);
  if (id >= 0)
    for (int t = 1; t < s.tp; ++t) {
      const int f = dev * s.tp + t;
      if (s.worker_of_slot[f] == RRFP_REMOTE_WORKER) continue;  // told by message (rrfp_sched_follow)
      s.follow[f].push_back(id);
      s.maybe[f].store(1, std::memory_order_release);
    }
  return id;
}

starpu_task* pop_task(unsigned sched_ctx) {
  State& s = *state_of(sched_ctx);
  int w = starpu_worker_get_id();
  int slot = w >= 0 && w < STARPU_NMAXWORKERS ? s.slot_of_worker[w].load(std::memory_order_relaxed) : -1;
  bool mine = slot >= 0 && s.maybe[slot].load(std::memory_order_acquire) != 0;
  if (!mine && slot >= 0) {
    const double wake = s.wake_us[slot].load(std::memory_order_acquire);
    mine = wake > 0 && starpu_timing_now() >= wake;
  }
  if (!mine && s.foreign_n.load(std::memory_order_acquire) == 0) {
    // The cheap idle path. Non-blocking drivers spin here; with more
    // workers than cores a spinning worker would hold a core for a whole
    // time slice while the worker that has a task waits (ms per hop in our
    // measurements). Yielding hands the core over at once.
    yield_relaxed();
    return nullptr;
  }
  lock_relaxed(s);
  starpu_task* out = nullptr;
  // An urgent foreign task (at the front) before the device's next pass:
  // the update of an asynchronous stage runs as soon as its group is done.
  for (auto it = s.foreign.begin(); it != s.foreign.end() && urgent(s, *it); ++it)
    if (starpu_worker_can_execute_task(static_cast<unsigned>(w), *it, 0)) {
      out = *it;
      s.foreign.erase(it);
      s.foreign_n.fetch_sub(1, std::memory_order_relaxed);
      if (slot >= 0 && out->cl == s.update_codelet && s.due[slot] > 0) --s.due[slot];
      break;
    }
  // Its group is done but the update is not pushed yet: no pass before it
  // (StarPU may push it after this worker asks again).
  if (!out && slot >= 0 && s.update_group > 0 && !s.drain && s.due[slot] > 0) {
    s.m.unlock();
    yield_relaxed();
    return nullptr;
  }
  if (!out && mine && s.arb) {
    int mt = choose(s, slot);
    if (mt >= 0) {
      s.taken[mt] = 1;
      s.events.fetch_add(1, std::memory_order_relaxed);
      out = s.by_id[mt];
    } else {
      s.maybe[slot].store(0, std::memory_order_relaxed);  // until the next push, finish or decision
    }
  }
  if (!out && s.foreign_n.load(std::memory_order_relaxed) > 0) {
    for (auto it = s.foreign.begin(); it != s.foreign.end(); ++it)
      if (starpu_worker_can_execute_task(static_cast<unsigned>(w), *it, 0)) {
        out = *it;
        s.foreign.erase(it);
        s.foreign_n.fetch_sub(1, std::memory_order_relaxed);
        break;
      }
  }
  s.m.unlock();
  if (!out) yield_relaxed();  // as on the cheap path: a polling worker hands its core over
  return out;
}

void post_exec_hook(starpu_task* task, unsigned sched_ctx) {
  State& s = *state_of(sched_ctx);
  std::lock_guard<std::mutex> g(s.m);  // no worker mutex is held here
  const rrfp_graph_task* a = graph_arg(s, task);
  if (!a || a->member != 0) return;  // the arbiter tracks the leader's tasks
  if (!s.drain) s.arb->on_finish(a->id, now_s());
  s.events.fetch_add(1, std::memory_order_relaxed);
  if (s.update_group > 0 && !s.drain) {
    const Task& t = s.arb->hint().graph->task(a->id);
    // The update runs where the stage's epilogue lives (its microbatch 0's
    // device), which for a replicated stage (AMDP) need not be t.device.
    if ((t.kind == Kind::W || t.kind == Kind::BW) && s.counted[t.stage] &&
        ++s.writes_done[t.stage] % s.update_group == 0)
      ++s.due[s.arb->hint().spec().device_of(t.stage, 0) * s.tp];
  }
  // A finished backward frees in-flight room for a forward of this device.
  s.maybe[s.device_of[a->id] * s.tp].store(1, std::memory_order_release);
}

template <Mode M>
void init_sched(unsigned sched_ctx) {
  starpu_sched_ctx_set_policy_data(sched_ctx, new State(M));
}
void deinit_sched(unsigned sched_ctx) {
  delete state_of(sched_ctx);
  starpu_sched_ctx_set_policy_data(sched_ctx, nullptr);
}

starpu_sched_policy make_policy(const char* name, const char* desc, void (*init)(unsigned)) {
  starpu_sched_policy p{};
  p.init_sched = init;
  p.deinit_sched = deinit_sched;
  p.push_task = push_task;
  p.pop_task = pop_task;
  p.post_exec_hook = post_exec_hook;
  p.policy_name = name;
  p.policy_description = desc;
  p.worker_type = STARPU_WORKER_LIST;
  return p;
}

// The context's state when its policy is one of ours, else null. StarPU
// keeps a copy of the policy struct per context: compare what it points to.
State* our_state(unsigned sched_ctx) {
  const starpu_sched_policy* p = starpu_sched_ctx_get_sched_policy(sched_ctx);
  const bool ours = p && (p->init_sched == init_sched<Mode::ReadinessFirst> || p->init_sched == init_sched<Mode::Strict> ||
                          p->init_sched == init_sched<Mode::BoundedWait>);
  return ours ? state_of(sched_ctx) : nullptr;
}

void set_error(char* err, size_t len, const std::string& msg) {
  if (err && len) std::snprintf(err, len, "%s", msg.c_str());
}

}  // namespace

starpu_sched_policy* rrfp_policy() {
  static starpu_sched_policy p = make_policy("rrfp", "readiness-first: ready task of best hint rank, in-flight cap",
                                             init_sched<Mode::ReadinessFirst>);
  return &p;
}

starpu_sched_policy* rrfp_fixed_policy() {
  static starpu_sched_policy p =
      make_policy("rrfp-fixed", "strict hint order per device, in-flight cap", init_sched<Mode::Strict>);
  return &p;
}

starpu_sched_policy* rrfp_wait_policy() {
  static starpu_sched_policy p = make_policy(
      "rrfp-wait", "readiness-first, waits a bounded time for the hint's preferred task when it is about to be ready",
      init_sched<Mode::BoundedWait>);
  return &p;
}

}  // namespace rrfp

using rrfp::State;

extern "C" int rrfp_sched_attach(unsigned sched_ctx, const rrfp_sched_config* cfg, char* err, size_t err_len) {
  State* sp = rrfp::our_state(sched_ctx);
  if (!sp) {
    rrfp::set_error(err, err_len, "the scheduling context's policy is not rrfp or rrfp-fixed");
    return -1;
  }
  State& s = *sp;
  std::lock_guard<std::mutex> g(s.m);
  auto* arb = static_cast<rrfp::Arbiter*>(cfg->arbiter);
  const int T = cfg->tp, slots = cfg->slots;
  std::string why;
  if (s.arb) why = "a run is already attached to this scheduling context";
  else if (!arb) why = "no arbiter";
  else if (arb->mode() != s.mode)
    why = "the arbiter's mode is not the policy's (rrfp: readiness-first, rrfp-wait: bounded wait, rrfp-fixed: strict)";
  else if (T < 1 || slots % T != 0) why = "one worker per device and member expected";
  else if (slots > rrfp::kMaxDevices) why = fmt::format("{} slots, at most {} for the rrfp policies", slots, rrfp::kMaxDevices);
  if (!why.empty()) {
    rrfp::set_error(err, err_len, why);
    return -1;
  }
  s.arb = arb;
  s.codelets.assign(cfg->codelets, cfg->codelets + cfg->ncodelets);
  s.worker_of_slot.assign(cfg->worker_of_slot, cfg->worker_of_slot + slots);
  s.drain = false;
  s.tp = T;
  s.n = cfg->tasks;
  s.device_of.resize(cfg->tasks);
  for (int id = 0; id < cfg->tasks; ++id) s.device_of[id] = arb->hint().graph->task(id).device;
  s.by_id.assign(static_cast<size_t>(cfg->tasks) * T, nullptr);
  s.taken.assign(static_cast<size_t>(cfg->tasks) * T, 0);
  s.pending.assign(slots, {});
  s.drain_pos.assign(slots, 0);
  s.follow.assign(slots, {});
  s.update_group = cfg->update_codelet ? cfg->update_group : 0;
  s.update_codelet = cfg->update_codelet;
  s.install_codelet = cfg->install_codelet;
  const int stages = arb->hint().spec().stages;
  s.writes_done.assign(stages, 0);
  s.counted.assign(stages, 1);
  if (cfg->update_counted) s.counted.assign(cfg->update_counted, cfg->update_counted + stages);
  s.due.assign(slots, 0);
  for (auto& d : s.slot_of_worker) d.store(-1);
  for (int i = 0; i < slots; ++i) {
    const int w = s.worker_of_slot[i];
    if (w >= 0 && w < STARPU_NMAXWORKERS) s.slot_of_worker[w].store(i);
    s.maybe[i].store(0);
    s.wake_us[i].store(0);
  }
  return 0;
}

extern "C" void rrfp_sched_detach(unsigned sched_ctx) {
  State* s = rrfp::our_state(sched_ctx);
  if (!s) return;
  std::lock_guard<std::mutex> g(s->m);
  s->arb = nullptr;
  s->codelets.clear();
  s->worker_of_slot.clear();
  for (auto& d : s->slot_of_worker) d.store(-1);
}

extern "C" void rrfp_sched_follow(unsigned sched_ctx, int device, int member, int task) {
  State* s = rrfp::our_state(sched_ctx);
  if (!s) return;
  std::lock_guard<std::mutex> g(s->m);
  if (!s->arb) return;
  const int slot = device * s->tp + member;
  s->follow[slot].push_back(task);
  s->events.fetch_add(1, std::memory_order_relaxed);
  s->maybe[slot].store(1, std::memory_order_release);
}

extern "C" long rrfp_sched_events(unsigned sched_ctx) {
  State* s = rrfp::our_state(sched_ctx);
  return s ? s->events.load(std::memory_order_relaxed) : 0;
}

extern "C" int rrfp_sched_stalled(unsigned sched_ctx, char* why, size_t why_len) {
  State* s = rrfp::our_state(sched_ctx);
  if (!s) return 0;
  std::lock_guard<std::mutex> g(s->m);
  if (!s->arb || s->drain || !s->arb->stalled()) return 0;
  rrfp::set_error(why, why_len, s->arb->describe());
  return 1;
}

extern "C" void rrfp_sched_drain(unsigned sched_ctx) {
  State* s = rrfp::our_state(sched_ctx);
  if (!s) return;
  std::lock_guard<std::mutex> g(s->m);
  s->drain = true;
  for (size_t d = 0; d < s->pending.size(); ++d) s->maybe[d].store(1);  // the polling workers look again
}
