// The arbitration core, shared by the StarPU policies, the simulator and the
// tests. Pure C++ and not thread-safe: callers hold their own lock.
//
// Tasks enter with on_ready() once their inputs exist; an idle device asks
// take(); finished tasks are reported with on_finish().
//   ReadinessFirst: the ready task of best (smallest) hint rank.
//   Strict:         only the next task of the device's order; idle until
//                   that one is ready.
// Memory bound: a forward starts only while the device's in-flight count
// (forwards started whose backward is not done) stays below its cap. Under
// ReadinessFirst a forward also leaves room for the forwards the hint places
// before it that have not started yet, so taking a later forward early can
// never starve an earlier one of memory (which could deadlock interleaved
// and V-shape hints).
#pragma once

#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

enum class Mode { ReadinessFirst, Strict };

struct ArbiterOptions {
  Mode mode = Mode::ReadinessFirst;
  int inflight_slack = 0;       // added to the default caps
  std::vector<int> cap;         // per device; empty = hint's peak + slack
  // Per device: 1 when this process runs its tasks (multi-rank runs, where
  // each rank arbitrates only its own devices); empty = every device.
  std::vector<unsigned char> local{};
};

class Arbiter {
 public:
  Arbiter(const Hint& hint, ArbiterOptions opt);

  void on_ready(int task);
  // A task for `device` to run now, or -1. The task counts as started.
  int take(int device);
  void on_finish(int task);

  const Hint& hint() const { return hint_; }
  Mode mode() const { return opt_.mode; }
  int cap(int device) const { return cap_[device]; }
  int inflight(int device) const { return dev_[device].inflight; }
  int peak_inflight(int device) const { return dev_[device].peak; }
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
  };
  bool forward_allowed(const Device& dev, int device, int task) const;
  void start(Device& dev, int task);
  int started_before(const Device& dev, int fwd_index) const;

  const Hint& hint_;
  ArbiterOptions opt_;
  std::vector<int> cap_;
  std::vector<Device> dev_;
  std::vector<int> fwd_index_;  // per task: index among its device's forwards in hint order
  std::vector<unsigned char> ready_, started_, finished_;
  int running_ = 0, remaining_ = 0;
};

Mode parse_mode(const std::string& policy);  // "rrfp" | "rrfp-fixed"

}  // namespace rrfp
