// Runs a hint's task graph on real StarPU workers, one CPU worker a device.
//
// Every pass is a StarPU task whose dependencies come from the data it
// reads and writes (runtime/data_plan.hpp): F(s,m) writes the activation
// handle F(s+1,m) reads, a backward writes the gradient handle the previous
// stage's backward reads, W and BW add into the stage's accumulator
// handle (RW | COMMUTE), the optional per-stage epilogue (the optimizer
// step, in training) reads and writes it after all of them. A message that
// crosses devices with a link delay goes through a link task that holds it
// for the delay (the emulated wire). The body gets the message buffers as
// a TaskIo. execute() opens the StarPU session itself and keeps it for the
// next run with the same policy and worker count (runtime/session.hpp).
// The submitter is runtime/graph_run.hpp, shared with the StarPU-MPI
// executor (mpi/mpi_executor.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hints/hint.hpp"
#include "sched/arbiter.hpp"  // kDefaultWaitRatio

namespace rrfp {

// The buffers of a task's messages: the one it reads (F: the previous
// stage's activation; B/BW: the next stage's gradient) and the one it
// writes, each ExecOptions::message_bytes long; null where it has none.
struct TaskIo {
  const void* in = nullptr;
  void* out = nullptr;
  std::size_t bytes = 0;
  // On a CUDA worker (ExecOptions::cuda): `in` and `out` are device
  // pointers on GPU `cuda_device`, and the body enqueues its work on
  // `stream` (the worker's StarPU stream, a cudaStream_t) and returns; the
  // task ends when that work is done (STARPU_CUDA_ASYNC). On a CPU worker:
  // -1 and null.
  int cuda_device = -1;
  void* stream = nullptr;
  // With ExecOptions::state_bytes (8-byte header first; on the task's data
  // node: host memory, or the GPU of a CUDA worker): a W/BW's accumulator,
  // a gated F's version handle; null otherwise.
  void* accumulator = nullptr;
  const void* version = nullptr;
};

// Inside an epilogue with ExecOptions::state_bytes: the accumulators it
// reads (device holding each, pointer on the task's data node) and the
// version it writes.
struct EpilogueIo {
  std::vector<std::pair<int, void*>> accumulators;
  void* version = nullptr;
};
// The running epilogue's (null elsewhere, and without state bytes).
const EpilogueIo* epilogue_io();
// The body of every graph task, called with member * tasks + task id.
using TaskBody = std::function<void(int call, const TaskIo& io)>;

// ExecOptions::workload_key from a description of the workload (stable
// across runs and builds: StarPU keeps the models' histories on disk).
std::uint32_t workload_key_of(const std::string& description);

struct ExecOptions {
  std::string policy;             // "" = STARPU_SCHED, unset = rrfp-wait (sched/policy_registry.hpp)
  // Every device is a CUDA worker instead of a CPU worker (docs/gpu.md):
  // the GPUs StarPU finds take the devices in contiguous blocks of
  // ceil(devices / GPUs), each device a worker with its own stream
  // (STARPU_NWORKER_PER_CUDA); the body gets device pointers and the
  // stream in its TaskIo. Throws SpecError where no GPU is usable.
  bool cuda = false;
  int inflight_slack = 0;         // added to the hint's in-flight peak (rrfp: RRFP_INFLIGHT_SLACK)
  std::vector<int> inflight_cap;  // per device; empty = hint peak + slack
  WaitRule wait{};                // rrfp-wait (sched/arbiter.hpp)
  // Activation bytes per device, bounded by the rrfp policies next to the
  // in-flight count (sched/memory_budget.hpp; `rrfp train --plan` with a
  // memory limit). Other policies cannot enforce it and are refused.
  MemoryBudgetOptions memory_budget;
  // Delay (seconds) of the k-th input edge of `task` when it crosses
  // devices; empty = no delay (the transfer task still exists).
  std::function<double(int task, int k)> link_delay_s;
  double stall_timeout_s = 10;  // any policy: nothing running, nothing in transit, no progress
  double stall_grace_s = 0.1;   // rrfp*: how long Arbiter::stalled() must hold
  bool profile = false;         // StarPU profiling info into ExecResult::prof_*
  // Tensor parallelism: every task runs as T member tasks on T workers of
  // its device group (slot d*T+t), member-wise dependencies; member 0's
  // policy decisions are followed by the others (sched/rrfp_policy.hpp).
  // With T > 1 the body is called with member * tasks + task id.
  int tensor_parallel = 1;
  // Optional: one StarPU task per model stage, run once every W/BW task of
  // that stage is done, on the worker of the device holding the stage (for
  // replicated stages, the device of its microbatch 0). Training's
  // optimizer step. A throw fails the run like a throwing body. With
  // T > 1: one per stage and member, called with member * stages + stage.
  std::function<void(int stage)> stage_epilogue;
  // 0: one epilogue per stage, as above. g > 0 (asynchronous training,
  // docs/async.md): one per stage and group of g consecutive microbatches,
  // run once that group's W/BW tasks of the stage are done and before the
  // next group's, ahead of the device's next pass under the rrfp policies;
  // called with group * stages + stage. T = 1 only; g divides M.
  int epilogue_group = 0;
  // With epilogue_group: L > 0 holds each forward of group k back until
  // its stage's epilogue of group k - L has run (AMDP: 2, so a microbatch
  // crosses at most one update; DataPlanOptions::gate_lag). 0: no gate.
  int gate_lag = 0;
  // Per model stage, 0 or W > 0: F(s, m) starts after the backward of
  // m - W on its stage (and, with epilogue_group, after the stage's update
  // that follows it), under every policy: PACI's admission window as data
  // flow (DataPlanOptions::forward_window). Empty: none.
  std::vector<int> forward_window;
  // Optional: run once on every worker when a StarPU session starts, before
  // any task (StarpuSession::init_workers_once); training sets up each
  // worker's LibTorch and BLAS threads there.
  std::function<void()> worker_init;
  // Bytes of every message handle (activations and gradients), at least 1.
  std::size_t message_bytes = 64;
  // What else decides a pass's duration, hashed (the model and its
  // partition; the bench's costs): part of the StarPU performance models'
  // footprint, so that two workloads with the same stage and message size
  // keep separate histories instead of flushing each other's.
  std::uint32_t workload_key = 0;  // workload_key_of(a description), 0: none
  // The training step or bench iteration this graph is, >= 0: each pass is
  // submitted inside starpu_iteration_push(iteration) and (microbatch), so
  // FxT's tasks.rec names both ("Iteration: 3 5"). -1: not marked.
  long iteration = -1;
  // Optional (AMDP across ranks, docs/async.md; DataPlanOptions): state
  // bytes of each stage's accumulators and version handles, and the device
  // whose accumulator a (stage, device)'s W/BW add into. On CPU or CUDA
  // workers (TaskIo::accumulator says where the bytes are).
  std::function<std::size_t(int stage)> state_bytes;
  std::function<int(int stage, int device)> accumulator_device;
  // With state bytes and a gate: run on `device`'s worker once the
  // epilogue's version (EpilogueIo::version) is there, for each device
  // holding another accumulator of its stage. Required then.
  std::function<void(int epilogue, int device)> stage_install;
  // Optional, for tests: called on the worker before every body (member *
  // tasks + id); a throw fails the task like a throwing body. Drivers build
  // it from RRFP_FAIL_TASK and friends; production runs leave it empty.
  std::function<void(int call)> task_hook;
};

struct ExecResult {
  std::string policy;
  int devices = 0, tasks = 0, transfers = 0;
  std::vector<double> start_s, end_s;       // per task, seconds since submission began
  std::vector<int> worker;                  // per task: StarPU worker that ran it
  std::vector<int> device_worker;           // per device: its StarPU worker
  std::vector<std::vector<int>> order;      // per device: task ids in execution order
  std::vector<double> prof_start_s, prof_end_s;  // per task from StarPU profiling (profile=true)
  std::vector<int> peak_inflight;           // per device, from the recorded times
  std::vector<int> inflight_cap;            // per device (enforced by the rrfp policies only)
  long waits = 0;                           // rrfp-wait: bounded waits decided
  // The rrfp policies in one process: per task, the arbiter's clock at its
  // on_ready, its device's first ask for it, its take and its on_finish
  // (Arbiter::ready_times() and friends), in seconds from the first
  // on_ready; what sim/decision_check.hpp replays. Empty for other policies.
  std::vector<double> arb_ready_s, arb_ask_s, arb_take_s, arb_finish_s;
  std::vector<double> arb_wait_s;  // Arbiter::wait_times(), -1: no wait
  std::vector<double> busy_s;               // per device
  double makespan_s = 0;                    // last end - first start (graph tasks)
  double wall_s = 0;                        // submission to completion (epilogues included)
  // Per model stage (T > 1: per member * stages + stage), when
  // ExecOptions::stage_epilogue is set: the StarPU worker that ran the
  // stage's epilogue (-1: not run here) and its times.
  std::vector<int> epilogue_worker;
  std::vector<double> epilogue_start_s, epilogue_end_s;
  // Tensor parallelism: start_s, end_s, worker, device_worker and order are
  // the leader's (member 0); per slot d*T+t:
  int tensor_parallel = 1;
  std::vector<int> member_worker;
  std::vector<std::vector<int>> member_order;  // graph task ids in execution order
  // The data flow: handles registered (this process), messages that crossed
  // ranks, dependencies declared by hand (none: docs/runtime.md).
  int data_handles = 0, explicit_dependencies = 0;
  long rank_messages = 0;
};

// The run stopped: a body threw (message names the task) or the run
// stalled (message carries Arbiter::describe()).
struct ExecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The run failed and StarPU could not be drained (tasks stuck in it, or
// other ranks still running): StarPU is left as it is and the process has
// to end; drivers print the message and exit (MPI_Abort under mpirun).
struct UnrecoverableError : ExecError {
  using ExecError::ExecError;
};

// Throws SpecError for bad configuration (policy, devices > workers, ...),
// ExecError when the run itself fails. Never hangs on a stall.
ExecResult execute(const Hint& hint, const TaskBody& body, const ExecOptions& opt = {});
// A body that needs no message buffers.
ExecResult execute(const Hint& hint, const std::function<void(int task)>& body, const ExecOptions& opt = {});

// Opens (or keeps) the StarPU session that execute(hint, ..., opt) will use,
// so that a caller timing its runs can leave StarPU's start-up out.
void prepare_session(const Hint& hint, const ExecOptions& opt = {});

// ExecOptions::cuda: opens (or keeps) the session and returns the GPU (its
// CUDA device index) of each device's worker.
std::vector<int> cuda_devices_of(const Hint& hint, const ExecOptions& opt);

// Inside a task body or epilogue: the CUDA stream (a cudaStream_t) of the
// CUDA worker running it, and its GPU; null and -1 on a CPU worker.
void* worker_cuda_stream();
int worker_cuda_device();

}  // namespace rrfp
