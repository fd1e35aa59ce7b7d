// The arbitration core, shared by the StarPU policies, the simulator and the
// tests. Pure C++ and not thread-safe: callers hold their own lock.
//
// Tasks enter with on_ready() once their inputs exist; an idle device asks
// take(); finished tasks are reported with on_finish().
//   ReadinessFirst: the ready task of best (smallest) hint rank.
//   Strict:         only the next task of the device's order; idle until
//                   that one is ready.
//   BoundedWait:    ReadinessFirst, except that a device may stay idle for
//                   a bounded time when the hint's preferred task (its next
//                   unstarted one) is predicted to be ready within half of
//                   the ready alternative's duration and another device
//                   waits for its output (instead of a W: within 0.4 of
//                   the W, whether or not another device waits for it),
//                   in runs without in-flight slack
//                   (docs/runtime.md, "Bounded-wait arbitration"). Needs
//                   the clock: pass `now`.
// Memory bound: a forward starts only while the device's in-flight count
// (forwards started whose backward is not done) stays below its cap. Under
// ReadinessFirst a forward also leaves room for the forwards the hint places
// before it that have not started yet, so taking a later forward early can
// never starve an earlier one of memory (which could deadlock interleaved
// and V-shape hints). With a byte budget (ArbiterOptions::memory) the same
// holds in activation bytes per device as well (sched/memory_budget.hpp).
#pragma once

#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "sched/memory_budget.hpp"

namespace rrfp {

enum class Mode { ReadinessFirst, Strict, BoundedWait };

// BoundedWait's budget and horizon, in expected durations of the
// alternative (docs/runtime.md says how they were chosen).
inline constexpr double kDefaultWaitRatio = 2.0;
inline constexpr double kDefaultWaitHorizon = 0.5;

// BoundedWait's rule, carried as one value from the policy's options to
// the arbiter (runtime, simulator, decision check): wait for the preferred
// task only when its predicted arrival is less than `horizon` x the
// alternative's expected duration away (and less than `ratio` x), and
// never longer than `ratio` x.
struct WaitRule {
  double ratio = kDefaultWaitRatio;
  double horizon = kDefaultWaitHorizon;
};

struct ArbiterOptions {
  Mode mode = Mode::ReadinessFirst;
  int inflight_slack = 0;       // added to the default caps
  std::vector<int> cap;         // per device; empty = hint's peak + slack
  // Per device: 1 when this process runs its tasks (multi-rank runs, where
  // each rank arbitrates only its own devices); empty = every device.
  std::vector<unsigned char> local{};
  WaitRule wait{};  // BoundedWait
  // Optional: each device's activation bytes, bounded next to the count cap.
  MemoryBudgetOptions memory{};
};

class Arbiter {
 public:
  Arbiter(const Hint& hint, ArbiterOptions opt);

  // `now` (seconds, any origin, non-decreasing) is read only by BoundedWait,
  // which learns pass durations and input delays from these calls.
  void on_ready(int task, double now = 0);
  // A task for `device` to run now, or -1. The task counts as started.
  int take(int device, double now = 0);
  void on_finish(int task, double now = 0);
  // After take() returned -1 under BoundedWait: the time at which the device
  // stops waiting for its preferred task and must ask again (it may ask
  // earlier, e.g. when a task becomes ready); -1 when it is not waiting.
  double wake_at(int device) const { return dev_[device].wake; }
  long waits() const { return waits_; }  // wait decisions taken (BoundedWait)
  // Per task, the `now` of its on_ready, take and on_finish (-1: not yet,
  // or not this process's), and of its device's first take() call after
  // the task before it (when the device started asking): what the arbiter
  // saw, for replays (sim/decision_check.hpp).
  const std::vector<double>& ready_times() const { return ready_t_; }
  const std::vector<double>& ask_times() const { return ask_t_; }
  // Per task: when its device decided a bounded wait between asking for it
  // and taking it (-1: none).
  const std::vector<double>& wait_times() const { return wait_t_; }
  const std::vector<double>& take_times() const { return start_t_; }
  const std::vector<double>& finish_times() const { return finish_t_; }

  const Hint& hint() const { return hint_; }
  Mode mode() const { return opt_.mode; }
  int cap(int device) const { return cap_[device]; }
  int inflight(int device) const { return dev_[device].inflight; }
  int peak_inflight(int device) const { return dev_[device].peak; }
  const MemoryBudget& memory() const { return budget_; }
  int running() const { return running_; }
  int remaining() const { return remaining_; }  // local tasks not finished
  bool is_local(int device) const { return opt_.local.empty() || opt_.local[device] != 0; }
  int ready_count(int device) const;
  // Nothing runs, tasks remain, and no device can take one: without an
  // outside event (a transfer still in flight) the run cannot progress.
  bool stalled() const;
  // Who waits for what, for error messages.
  std::string describe() const;

 private:
  struct Entry {
    int rank, task;
    bool operator>(const Entry& o) const { return rank > o.rank; }
  };
  struct Device {
    std::vector<Entry> fwd, other;  // min-heaps by rank (ReadinessFirst)
    size_t next = 0;                // next position in order (Strict)
    int inflight = 0, peak = 0;
    std::vector<int> fenwick;       // forwards started, by forward index
    int nfwd = 0;
    int last_fwd_rank = -1;  // rank of the last F in its order: later W's are the drain's
    // BoundedWait: the preferred task is order[pref] (first not started).
    size_t pref = 0;
    int waiting_for = -1, gave_up = -1;
    double deadline = -1, wake = -1;
    double first_ask = -1;  // first take() since the device's last start
    double wait_decided = -1;  // the first wait decided since then
  };
  struct Mean {
    double sum = 0;
    int n = 0;
    void add(double x) { sum += x, ++n; }
    double get() const { return n ? sum / n : -1; }
  };
  // BoundedWait.
  bool should_wait(Device& dev, int device, int alternative, double now);
  double predicted_ready(int task, double now) const;  // -1: cannot tell
  double expected(int task) const;                     // -1: no estimate yet
  int preferred(int device);                           // first unstarted task of its order, or -1
  bool starves_a_consumer(int task);
  int peek(const Device& dev, int device, bool* use_fwd) const;
  bool forward_allowed(const Device& dev, int device, int task) const;
  void start(Device& dev, int task, double now);
  void push_ready(const Task& t, int task);
  void observe_arrival(const Task& t, int task, double now);
  int started_before(const Device& dev, int fwd_index) const;

  const Hint& hint_;
  ArbiterOptions opt_;
  std::vector<int> cap_;
  MemoryBudget budget_;
  std::vector<Device> dev_;
  std::vector<int> fwd_index_;  // per task: index among its device's forwards in hint order
  std::vector<unsigned char> ready_, started_, finished_;
  int running_ = 0, remaining_ = 0;
  // Clock readings (every mode), and BoundedWait's running estimates.
  std::vector<double> ready_t_, ask_t_, wait_t_, start_t_, finish_t_;
  std::vector<Mean> pass_mean_;  // per (stage, kind)
  Mean input_delay_;             // cross-device: last input's finish to ready
  long waits_ = 0;
};

Mode parse_mode(const std::string& policy);  // "rrfp" | "rrfp-fixed" | "rrfp-wait"
const char* mode_policy_name(Mode m);         // the inverse

}  // namespace rrfp
