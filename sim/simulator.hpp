// Discrete-event simulator: executes a hint's task graph with the same
// arbitration core as the StarPU policies (sched/arbiter.hpp), so what it
// predicts is what the runtime decides. Durations come from a function of
// the task (the seeded cost model of the runtime, or unit costs).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "sched/arbiter.hpp"

namespace rrfp {

// Communication: a message crossing devices takes latency + bytes/bandwidth.
// With serialize_links, transfers on one directed link go one at a time.
// overlap=false makes the sending device wait for its transfer (no
// compute/communication overlap).
struct CommModel {
  double latency_s = 0;
  double bandwidth_Bps = std::numeric_limits<double>::infinity();
  double message_bytes = 0;    // activation / gradient message size
  bool serialize_links = true;
  bool overlap = true;
  // Stage copies' gradient reduction (replica_allreduce): false, each
  // stage's from its own last pass (`rrfp train --mirror-reduce overlap`);
  // true, after the whole graph, one stage after another, last stage first
  // (`after-graph`: blocking exchanges once the step's graph has ended).
  bool mirror_after_graph = false;
  // Extra delay for one transfer (e.g. the cost model's link jitter).
  std::function<double(int from_task, int to_task)> extra;
  void validate() const;
};

// Memory: activation bytes held per in-flight (stage, microbatch), from the
// forward's start to the end of its backward (B or BW); weights per stage,
// counted once per copy (Chimera's two directions hold two copies).
struct MemoryModel {
  std::vector<double> activation_bytes;  // per stage; empty = 1 per stage
  std::vector<double> weight_bytes;      // per stage; empty = 1 per stage
  // Split backward: hold the activation until W ends rather than B (the
  // trainer's B leaves the linear layers' inputs and output gradients for
  // W: most of the activation lives on until then).
  bool release_at_w = false;
};

struct SimOptions {
  Mode mode = Mode::ReadinessFirst;
  int inflight_slack = 0;
  std::vector<int> inflight_cap;  // per device; empty = the hint's peak + inflight_slack
  WaitRule wait{};  // BoundedWait
  std::function<double(int)> duration;  // required unless end_at is set
  CommModel comm;
  MemoryModel memory;
  // Per device: the activation bytes the arbiter lets it hold (memory.
  // activation_bytes per forward, sched/memory_budget.hpp); empty = no budget.
  std::vector<double> memory_budget;
  // Asynchronous updates (docs/async.md), as on the runtime's grouped
  // epilogues: update_group > 0 orders each group of that many microbatches'
  // W/BW on a stage after the previous group's (the stage's update between
  // them), and gate_lag > 0 holds a forward of group k until its stage's
  // update of group k - gate_lag (AMDP: 2). The update is device time, not
  // a graph task: update_s on every device holding the stage (each holds a
  // copy of its weights, as separate GPUs do), after the group's last W/BW
  // has sent its output and before that device's next pass (as the rrfp
  // policies run a due update); the held tasks become ready when every
  // holder's update has ended. A stage with several holders first reduces
  // the group's gradients over the link (CommModel; with
  // mirror_after_graph once after the graph instead, replica_allreduce).
  int update_group = 0;
  int gate_lag = 0;
  double update_s = 0;
  // Devices that can start a task at one instant are offered work in the
  // order their events touched them; a nonzero seed shuffles that order
  // instead (real workers race there: sim/decision_check.hpp).
  std::uint64_t tie_shuffle_seed = 0;
  // Optional: when a task without inputs becomes ready (default: at 0; a
  // runtime submits them over some time).
  std::function<double(int)> source_ready;
  // Optional: how long after finishing a task a device asks for its next
  // one (a worker's latency), given the device and how many tasks it has
  // started; default 0.
  std::function<double(int device, int started)> ask_delay;
  // Optional: the earliest time at or after `now` at which the arbiter may
  // be asked for a device's next task, given the device and how many tasks
  // it has started (a worker late to ask, or a replay's recorded instants).
  std::function<double(int device, int started, double now)> hold_until;
  // Optional: when a task started at `start` ends, instead of start +
  // duration(task) (a replay pins recorded finishes).
  std::function<double(int task, double start)> end_at;
};

struct SimResult {
  bool complete = false;
  std::string stuck;                 // when !complete
  double makespan = 0;
  double bubble_ratio = 0;
  std::vector<double> start, end;    // per task
  std::vector<double> busy;          // per device
  std::vector<int> peak_inflight, inflight_cap;
  std::vector<double> peak_activation_bytes, weight_bytes;  // per device
  std::vector<std::vector<int>> executed;  // per device, in execution order
  long waits = 0;                    // BoundedWait's wait decisions
  // SimOptions::update_s > 0: each update run, one per holder of the stage
  // (update = stage * groups + group, as UpdateHolds numbers them).
  struct UpdateRun {
    int device, update;
    double start, end;
  };
  std::vector<UpdateRun> updates;
};

SimResult simulate(const Hint& hint, const SimOptions& opt);

}  // namespace rrfp
