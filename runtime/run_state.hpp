// What one run's StarPU callbacks share with the thread that waits for them,
// common to execute() and the MPI executor (each derives its own Run with
// what only it needs), and the callbacks that are the same in both: the
// epilogue body and the start of a transfer's link delay.
#pragma once

#include <starpu.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "graph/task_graph.hpp"

namespace rrfp {

class LinkThread;

struct RunState {
  using Clock = std::chrono::steady_clock;
  const TaskGraph* g = nullptr;
  int n = 0, tp = 1;                                   // graph tasks, tensor-parallel members
  const std::function<void(int)>* body = nullptr;      // called with member * n + task id
  const std::function<void(int)>* epilogue = nullptr;  // member * stages + stage; may be null
  Clock::time_point t0{};  // now() counts from here (default: the clock's epoch, comparable across ranks)
  // Per member task (member * n + id), in now() seconds, and its worker.
  std::vector<double> start, end;
  std::vector<int> worker;
  std::vector<double> epi_start, epi_end;  // per epilogue
  std::vector<int> epi_worker;
  std::vector<std::vector<int>> by_worker;  // task ids per worker, each written only by its worker thread
  std::atomic<int> done{0}, running{0};
  std::atomic<bool> abort{false};  // a failed run drains without doing work
  int total = 0;               // tasks the watchdog waits for (set before submission)
  std::mutex m;
  std::condition_variable cv;  // notified on the last completion and on failures
  std::string error;           // first failure
  LinkThread* link = nullptr;

  // Sizes the records for tasks of `g` with `tp` members, `epilogues`
  // epilogue tasks and the StarPU workers of the session.
  void size_records(int epilogues);
  double now() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  void fail(std::string msg);
  // A task's body is over: counts it, and wakes the watchdog when it was the
  // last one. Not on every task: each wake-up took a core from the workers
  // (on one core, a context switch per pass); stalls are found on the
  // watchdog's own timer.
  void finished_one();
};

// A transfer task (no codelet) held for its link delay once its producer is
// done: transfer_started is its prologue_callback_pop_func.
struct TransferArg {
  RunState* run;
  starpu_task* task;
  double delay_s;
};
void transfer_started(void* transfer_arg);

// The codelet function of a stage's epilogue (cl_arg: EpilogueArg): calls
// run->epilogue(index) unless the run was aborted, records time and worker.
struct EpilogueArg {
  int index;  // member * stages + stage
  RunState* run;
};
void epilogue_body(void** buffers, void* cl_arg);

}  // namespace rrfp
