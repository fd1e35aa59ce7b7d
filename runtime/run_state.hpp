// What one run's StarPU callbacks share with the thread that waits for
// them (runtime/graph_run.cpp): records of every task, the first failure,
// the counters the watchdog reads.
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
#include "runtime/executor.hpp"

namespace rrfp {

class LinkThread;
class DecisionChannel;

struct RunState {
  using Clock = std::chrono::steady_clock;
  const TaskGraph* g = nullptr;
  int n = 0, tp = 1;                                   // graph tasks, tensor-parallel members
  std::uint32_t workload_key = 0;                      // ExecOptions::workload_key, for the footprints
  const TaskBody* body = nullptr;                      // called with member * n + task id
  const std::function<void(int)>* epilogue = nullptr;  // member * stages + stage; may be null
  const std::function<void(int, int)>* install = nullptr;  // ExecOptions::stage_install; may be null
  const std::function<void(int)>* hook = nullptr;      // ExecOptions::task_hook; may be null
  DecisionChannel* decisions = nullptr;                // multi-rank tensor parallelism
  LinkThread* link = nullptr;
  Clock::time_point t0{};  // now() counts from here (default: the clock's epoch, comparable across ranks)
  // Per member task (member * n + id), in now() seconds, its worker and
  // its place in that worker's order.
  std::vector<double> start, end;
  std::vector<int> worker, pos;
  std::vector<double> prof_start, prof_end;  // StarPU's profiling (ExecOptions::profile), microseconds
  std::vector<double> epi_start, epi_end;    // per epilogue, then per install
  std::vector<int> epi_worker;
  std::vector<std::vector<int>> by_worker;  // task ids per worker, each written only by its worker thread
  std::atomic<int> done{0}, running{0};
  std::atomic<int> arrived{0};     // local tasks whose input from another rank arrived
  std::atomic<bool> abort{false};  // a failed run drains without doing work
  int total = 0;                   // tasks the watchdog waits for (set before submission)
  std::mutex m;
  std::condition_variable cv;  // notified on the last completion and on failures
  std::string error;           // first failure

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
  // A task (or epilogue) ended: its end time into `at`, counted as above.
  void ended(double& at) {
    at = now();
    running.fetch_sub(1);
    finished_one();
  }
};

}  // namespace rrfp
