#include "sched/rrfp_policy.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

#include <sched.h>

namespace rrfp {

namespace {

constexpr int kMaxDevices = 64;

struct State {
  std::mutex m;
  PolicyRun run;
  Arbiter* arb = nullptr;  // null: no run attached
  bool drain = false;
  int tp = 1, n = 0;
  // Indexed by member task, member * n + graph id.
  std::vector<starpu_task*> by_id;
  std::vector<unsigned char> taken;
  // Indexed by slot, device * tp + member.
  std::vector<std::vector<int>> pending;  // member tasks pushed (for drain)
  std::vector<size_t> drain_pos;
  std::vector<std::deque<int>> follow;    // followers: graph ids the leader took, in order
  std::deque<starpu_task*> foreign;
  // Read without the lock on the idle pop path, so they are atomics: an
  // idle worker must not touch the mutex unless something changed for it.
  std::atomic<int> slot_of_worker[STARPU_NMAXWORKERS];
  std::atomic<int> maybe[kMaxDevices];  // per slot, 1: pop may find a task
  std::atomic<int> foreign_n{0};
  std::atomic<long> events{0};
  State() {
    for (auto& d : slot_of_worker) d.store(-1);
    for (auto& x : maybe) x.store(0);
  }
};

State& st() {
  static State s;
  return s;
}

// The task's GraphTaskArg, or null for a task that is not part of the
// attached run.
const GraphTaskArg* graph_arg(const State& s, const starpu_task* task) {
  if (!s.arb) return nullptr;
  for (const starpu_codelet* cl : s.run.codelets)
    if (task->cl == cl) return static_cast<const GraphTaskArg*>(task->cl_arg);
  return nullptr;
}

// Wakes a worker that may sleep. With non-blocking drivers (Debian's build)
// idle workers poll pop_task, and starpu_wake_worker_relax_light would make
// the pusher wait until the target reaches a scheduling point: 10x slower
// dispatch in our measurements. So, like eager, we only wake when workers
// can block.
inline void wake(int worker) {
#ifdef STARPU_NON_BLOCKING_DRIVERS
  (void)worker;
#else
  starpu_wake_worker_relax_light(worker);
#endif
}

void lock_relaxed(State& s) {
  // A worker may call us holding its own sched mutex; relax so that others
  // can wake it while it waits for our lock.
  starpu_worker_relax_on();
  s.m.lock();
  starpu_worker_relax_off();
}

int push_task(starpu_task* task) {
  State& s = st();
  lock_relaxed(s);
  if (const GraphTaskArg* a = graph_arg(s, task)) {
    const int id = a->id, dev = s.arb->hint().graph->task(id).device, slot = dev * s.tp + a->member;
    s.by_id[a->member * s.n + id] = task;
    s.pending[slot].push_back(a->member * s.n + id);
    if (!s.drain && a->member == 0) s.arb->on_ready(id);  // followers wait for the leader's decision
    s.events.fetch_add(1, std::memory_order_relaxed);
    s.maybe[slot].store(1, std::memory_order_release);
    starpu_push_task_end(task);  // before unlocking: nobody can pop it yet
    int w = s.run.worker_of_slot[slot];
    s.m.unlock();
    wake(w);
    return 0;
  }
  s.foreign.push_back(task);
  s.foreign_n.fetch_add(1, std::memory_order_release);
  starpu_push_task_end(task);
  s.m.unlock();
  unsigned n = starpu_worker_get_count();
  for (unsigned w = 0; w < n; ++w)
    if (starpu_worker_can_execute_task(w, task, 0)) wake(static_cast<int>(w));
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
  int id = s.arb->take(dev);
  if (id >= 0)
    for (int t = 1; t < s.tp; ++t) {
      const int f = dev * s.tp + t;
      if (s.run.worker_of_slot[f] == kRemoteWorker) continue;  // told by message (policy_follow)
      s.follow[f].push_back(id);
      s.maybe[f].store(1, std::memory_order_release);
    }
  return id;
}

starpu_task* pop_task(unsigned /*sched_ctx*/) {
  State& s = st();
  int w = starpu_worker_get_id();
  int slot = w >= 0 && w < STARPU_NMAXWORKERS ? s.slot_of_worker[w].load(std::memory_order_relaxed) : -1;
  bool mine = slot >= 0 && s.maybe[slot].load(std::memory_order_acquire) != 0;
  if (!mine && s.foreign_n.load(std::memory_order_acquire) == 0) {
    // The cheap idle path. Non-blocking drivers spin here; with more
    // workers than cores a spinning worker would hold a core for a whole
    // time slice while the worker that has a task waits (ms per hop in our
    // measurements). Yielding hands the core over at once.
    sched_yield();
    return nullptr;
  }
  lock_relaxed(s);
  starpu_task* out = nullptr;
  if (mine && s.arb) {
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
  return out;
}

void post_exec_hook(starpu_task* task, unsigned /*sched_ctx*/) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);  // no worker mutex is held here
  const GraphTaskArg* a = graph_arg(s, task);
  if (!a || a->member != 0) return;  // the arbiter tracks the leader's tasks
  if (!s.drain) s.arb->on_finish(a->id);
  s.events.fetch_add(1, std::memory_order_relaxed);
  // A finished backward frees in-flight room for a forward of this device.
  s.maybe[s.arb->hint().graph->task(a->id).device * s.tp].store(1, std::memory_order_release);
}

void init_sched(unsigned /*sched_ctx*/) {}
void deinit_sched(unsigned /*sched_ctx*/) {}

starpu_sched_policy make_policy(const char* name, const char* desc) {
  starpu_sched_policy p{};
  p.init_sched = init_sched;
  p.deinit_sched = deinit_sched;
  p.push_task = push_task;
  p.pop_task = pop_task;
  p.post_exec_hook = post_exec_hook;
  p.policy_name = name;
  p.policy_description = desc;
  p.worker_type = STARPU_WORKER_LIST;
  return p;
}

}  // namespace

starpu_sched_policy* rrfp_policy() {
  static starpu_sched_policy p = make_policy("rrfp", "readiness-first: ready task of best hint rank, in-flight cap");
  return &p;
}

starpu_sched_policy* rrfp_fixed_policy() {
  static starpu_sched_policy p = make_policy("rrfp-fixed", "strict hint order per device, in-flight cap");
  return &p;
}

void policy_attach(const PolicyRun& run) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);
  const int T = run.tp, slots = static_cast<int>(run.worker_of_slot.size());
  if (T < 1 || slots % T != 0) throw SpecError("policy_attach: one worker per device and member expected");
  if (slots > kMaxDevices) throw SpecError("too many devices for the rrfp policy");
  s.run = run;
  s.arb = run.arbiter;
  s.drain = false;
  s.tp = T;
  s.n = run.tasks;
  s.by_id.assign(static_cast<size_t>(run.tasks) * T, nullptr);
  s.taken.assign(static_cast<size_t>(run.tasks) * T, 0);
  s.pending.assign(slots, {});
  s.drain_pos.assign(slots, 0);
  s.follow.assign(slots, {});
  for (auto& d : s.slot_of_worker) d.store(-1);
  for (int i = 0; i < slots; ++i) {
    if (run.worker_of_slot[i] != kRemoteWorker) s.slot_of_worker[run.worker_of_slot[i]].store(i);
    s.maybe[i].store(0);
  }
}

void policy_detach() {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);
  s.arb = nullptr;
  s.run = PolicyRun{};
  for (auto& d : s.slot_of_worker) d.store(-1);
}

void policy_follow(int device, int member, int task) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);
  if (!s.arb) return;
  const int slot = device * s.tp + member;
  s.follow[slot].push_back(task);
  s.events.fetch_add(1, std::memory_order_relaxed);
  s.maybe[slot].store(1, std::memory_order_release);
}

long policy_events() { return st().events.load(std::memory_order_relaxed); }

bool policy_stalled(std::string* why) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);
  if (!s.arb || s.drain || !s.arb->stalled()) return false;
  if (why) *why = s.arb->describe();
  return true;
}

void policy_drain() {
  State& s = st();
  std::vector<int> workers;
  {
    std::lock_guard<std::mutex> g(s.m);
    s.drain = true;
    for (size_t d = 0; d < s.pending.size(); ++d) s.maybe[d].store(1);
    workers = s.run.worker_of_slot;
  }
  for (int w : workers)
    if (w != kRemoteWorker) wake(w);  // never under our lock
}

}  // namespace rrfp
