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
  std::vector<starpu_task*> by_id;
  std::vector<std::vector<int>> pending;  // per device, ids pushed (for drain)
  std::vector<size_t> drain_pos;
  std::vector<unsigned char> taken;
  std::deque<starpu_task*> foreign;
  // Read without the lock on the idle pop path, so they are atomics: an
  // idle worker must not touch the mutex unless something changed for it.
  std::atomic<int> dev_of_worker[STARPU_NMAXWORKERS];
  std::atomic<int> maybe[kMaxDevices];  // 1: take() may return a task
  std::atomic<int> foreign_n{0};
  std::atomic<long> events{0};
  State() {
    for (auto& d : dev_of_worker) d.store(-1);
    for (auto& x : maybe) x.store(0);
  }
};

State& st() {
  static State s;
  return s;
}

// Graph task id, or -1 for a task that is not part of the attached run.
int graph_id(const State& s, const starpu_task* task) {
  if (!s.arb) return -1;
  for (const starpu_codelet* cl : s.run.codelets)
    if (task->cl == cl) return static_cast<const GraphTaskArg*>(task->cl_arg)->id;
  return -1;
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
  int id = graph_id(s, task);
  if (id >= 0) {
    int dev = s.arb->hint().graph->task(id).device;
    s.by_id[id] = task;
    s.pending[dev].push_back(id);
    if (!s.drain) s.arb->on_ready(id);
    s.events.fetch_add(1, std::memory_order_relaxed);
    s.maybe[dev].store(1, std::memory_order_release);
    starpu_push_task_end(task);  // before unlocking: nobody can pop it yet
    int w = s.run.worker_of_device[dev];
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

starpu_task* pop_task(unsigned /*sched_ctx*/) {
  State& s = st();
  int w = starpu_worker_get_id();
  int dev = w >= 0 && w < STARPU_NMAXWORKERS ? s.dev_of_worker[w].load(std::memory_order_relaxed) : -1;
  bool mine = dev >= 0 && s.maybe[dev].load(std::memory_order_acquire) != 0;
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
    int id = -1;
    if (s.drain) {
      auto& p = s.pending[dev];
      size_t& i = s.drain_pos[dev];
      while (i < p.size() && s.taken[p[i]]) ++i;
      if (i < p.size()) id = p[i];
    } else {
      id = s.arb->take(dev);
    }
    if (id >= 0) {
      s.taken[id] = 1;
      s.events.fetch_add(1, std::memory_order_relaxed);
      out = s.by_id[id];
    } else {
      s.maybe[dev].store(0, std::memory_order_relaxed);  // until the next push or finish
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
  int id = graph_id(s, task);
  if (id < 0) return;
  if (!s.drain) s.arb->on_finish(id);
  s.events.fetch_add(1, std::memory_order_relaxed);
  // A finished backward frees in-flight room for a forward of this device.
  s.maybe[s.arb->hint().graph->task(id).device].store(1, std::memory_order_release);
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
  const int n = run.tasks, D = static_cast<int>(run.worker_of_device.size());
  if (D > kMaxDevices) throw SpecError("too many devices for the rrfp policy");
  s.run = run;
  s.arb = run.arbiter;
  s.drain = false;
  s.by_id.assign(n, nullptr);
  s.taken.assign(n, 0);
  s.pending.assign(D, {});
  s.drain_pos.assign(D, 0);
  for (auto& d : s.dev_of_worker) d.store(-1);
  for (int d = 0; d < D; ++d) {
    s.dev_of_worker[run.worker_of_device[d]].store(d);
    s.maybe[d].store(0);
  }
}

void policy_detach() {
  State& s = st();
  std::lock_guard<std::mutex> g(s.m);
  s.arb = nullptr;
  s.run = PolicyRun{};
  for (auto& d : s.dev_of_worker) d.store(-1);
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
    workers = s.run.worker_of_device;
  }
  for (int w : workers) wake(w);  // never under our lock
}

}  // namespace rrfp
