// The codelets of a run, one per pass kind (F, B, W, BW), the link task of
// an emulated wire, the send and receive of an ordered channel between
// ranks, the per-stage epilogue (training's optimizer step) and the
// install of its weights on other ranks (AMDP). All take a variable
// number of buffers (modes set per task, data_plan.hpp) and carry a
// history-based performance model keyed by stage and message size
// (footprint), under the symbols rrfp_F, rrfp_B, rrfp_W, rrfp_BW,
// rrfp_epilogue and rrfp_install, so dmda, dmdas and heteroprio have real models to use
// (docs/runtime.md, "Performance models").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <starpu.h>

#include "graph/task_graph.hpp"
#include "sched/rrfp_sched.h"

namespace rrfp {

// What a graph task's cl_arg points to: the policy reads the rrfp_graph_task
// part (sched/rrfp_sched.h); the body and the performance models the rest.
struct TaskArg : rrfp_graph_task {
  TaskArg() : rrfp_graph_task{-1, nullptr, 0} {}
  int stage = 0;
  int in_buf = -1, out_buf = -1;  // buffer index of the message read / written
  int acc_buf = -1, version_buf = -1;  // buffer index of the state bytes (ExecOptions::state_bytes)
  std::size_t message_bytes = 0;
};

// Marks the tasks submitted while it lives with (iteration, microbatch):
// FxT's tasks.rec then says "Iteration: 3 5". Nothing when iteration < 0.
// StarPU 1.4.10's starpu_iteration_pop leaves the first level set, so
// tasks submitted between marks carry the iteration alone, until clear().
class IterationMark {
 public:
  IterationMark(long iteration, int microbatch);
  ~IterationMark();
  IterationMark(const IterationMark&) = delete;
  IterationMark& operator=(const IterationMark&) = delete;
  static void clear();  // no mark on what is submitted next

 private:
  bool on_;
};

// The codelets' functions (runtime/task_bodies.cpp):
// the same function serves CPU and CUDA workers (on a CUDA worker the body
// gets device pointers and the worker's stream, runtime/executor.hpp).
void graph_task_body(void** buffers, void* cl_arg);
void link_task_body(void** buffers, void* cl_arg);
void epilogue_task_body(void** buffers, void* cl_arg);
void release_task_body(void** buffers, void* cl_arg);
void channel_task_body(void** buffers, void* cl_arg);  // cl_arg: ChannelArg
// Ends a task held by an end dependency (a link, a channel's send or
// receive) from a tiny task on a worker: policies such as dmda need the
// held task to terminate on a worker. A channel's at STARPU_MAX_PRIO:
// the rrfp policies then run it before the device's next pass.
void end_on_a_worker(starpu_task* held, int priority = 0);
// Epilogue callbacks of passes and epilogue tasks: they record the task's
// end when StarPU saw it end (on a CUDA worker, when its GPU work is done:
// STARPU_CUDA_ASYNC), before StarPU releases the tasks that depend on it.
void pass_ended(void* cl_arg);
void epilogue_ended(void* epilogue_arg);

starpu_codelet* pass_codelet(Kind k);
starpu_codelet* link_codelet();
starpu_codelet* epilogue_codelet();
starpu_codelet* install_codelet();  // same body as the epilogue (EpilogueArg::install_of)
// No data: ends a link task whose delay is over (cl_arg: the link task).
starpu_codelet* release_codelet();
// One buffer (the message R, or the received copy W); CPU workers: the
// wire reads and writes host memory.
starpu_codelet* channel_send_codelet();
starpu_codelet* channel_receive_codelet();
// The four pass codelets: the policy recognises graph tasks by them.
std::vector<const starpu_codelet*> pass_codelets();

}  // namespace rrfp
