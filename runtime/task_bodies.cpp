// The codelets' CPU functions (runtime/codelets.hpp): a graph task's pass,
// a link's wire, an epilogue or install, and their end callbacks. The same
// function serves CPU and CUDA workers.
#include <fmt/format.h>

#include "runtime/codelets.hpp"
#include "runtime/executor.hpp"
#include "runtime/link_thread.hpp"
#include "runtime/rank_transport.hpp"
#include "runtime/starpu_tasks.hpp"
#include "runtime/task_bodies.hpp"

namespace rrfp {

namespace {
thread_local const EpilogueIo* current_epilogue_io = nullptr;
}  // namespace

const EpilogueIo* epilogue_io() { return current_epilogue_io; }

void graph_task_body(void** buffers, void* cl_arg) {
  auto* a = static_cast<TaskArg*>(cl_arg);
  RunState* r = static_cast<RunState*>(a->owner);
  const int id = a->id, mt = a->member * r->n + id, w = starpu_worker_get_id();
  r->worker[mt] = w;
  r->pos[mt] = static_cast<int>(r->by_worker[w].size());
  r->by_worker[w].push_back(id);
  r->running.fetch_add(1);
  r->start[mt] = r->now();
  if (a->member == 0 && r->decisions)  // tell the followers on other ranks
    if (std::string e = r->decisions->announce(r->g->task(id).device, id); !e.empty()) r->fail(e);
  if (!r->abort.load()) {  // an aborted run drains without doing work
    TaskIo io;
    io.bytes = a->message_bytes;
    if (a->in_buf >= 0) io.in = reinterpret_cast<const void*>(STARPU_VECTOR_GET_PTR(buffers[a->in_buf]));
    if (a->out_buf >= 0) io.out = reinterpret_cast<void*>(STARPU_VECTOR_GET_PTR(buffers[a->out_buf]));
    if (a->acc_buf >= 0) io.accumulator = reinterpret_cast<void*>(STARPU_VECTOR_GET_PTR(buffers[a->acc_buf]));
    if (a->version_buf >= 0) io.version = reinterpret_cast<const void*>(STARPU_VECTOR_GET_PTR(buffers[a->version_buf]));
    io.cuda_device = worker_cuda_device();
    io.stream = worker_cuda_stream();
    std::string err = run_guarded(
        [&] {
          if (r->hook && *r->hook) (*r->hook)(mt);
          (*r->body)(mt, io);
        },
        "task " + member_task_name(r->g->label(id), a->member, r->tp));
    if (!err.empty()) r->fail(std::move(err));
  }
  // The end is recorded by pass_ended: on a CUDA worker the work the body
  // enqueued is still running.
}

void pass_ended(void* cl_arg) {
  auto* a = static_cast<TaskArg*>(cl_arg);
  RunState* r = static_cast<RunState*>(a->owner);
  r->ended(r->end[a->member * r->n + a->id]);
}

// The wire: the task ends (its consumer may start) after the link delay.
void link_task_body(void** /*buffers*/, void* cl_arg) {
  auto* a = static_cast<LinkArg*>(cl_arg);
  a->run->link->schedule(a->task, a->run->abort.load() ? 0.0 : a->delay_s);
}

void release_task_body(void** /*buffers*/, void* cl_arg) {
  (void)worker_cuda_stream();  // on a GPU: StarPU warns about a CUDA task that never asked for its stream
  starpu_task_end_dep_release(static_cast<starpu_task*>(cl_arg));
}

void end_on_a_worker(starpu_task* held, int priority) {
  starpu_task* r = starpu_task_create();
  r->cl = release_codelet();
  r->cl_arg = held;
  r->destroy = 1;
  r->priority = priority;
  if (starpu_task_submit(r) != 0) starpu_task_end_dep_release(held);  // StarPU is going down: from here then
}

namespace {
// The buffer is ours on the task's data node: hand it to the wire,
// which gives it back (and ends the task) when the bytes have moved.
void channel_buffer_acquired(void* arg) {
  auto* a = static_cast<ChannelArg*>(arg);
  starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(a->task, 0);
  void* ptr = starpu_data_handle_to_pointer(h, static_cast<unsigned>(a->node));
  auto done = [a, h] {
    starpu_data_release_on_node(h, a->node);
    if (!a->send && a->arrived) a->arrived(a->arrival);
    end_on_a_worker(a->task, STARPU_MAX_PRIO);
  };
  if (a->send) a->channels->send(a->peer, a->msg, ptr, a->bytes, std::move(done));
  else a->channels->receive(a->peer, a->msg, ptr, a->bytes, std::move(done));
}
}  // namespace

void channel_task_body(void** buffers, void* cl_arg) {
  auto* a = static_cast<ChannelArg*>(cl_arg);
  (void)worker_cuda_stream();  // as in release_task_body
  a->bytes = STARPU_VECTOR_GET_NX(buffers[0]) * STARPU_VECTOR_GET_ELEMSIZE(buffers[0]);
  a->node = starpu_task_get_current_data_node(0);  // where StarPU put the buffer for this task
  // StarPU lets go of the task's own hold on the buffer when the body
  // returns, well before the held task ends: on a GPU it could then write
  // the buffer back or reuse its memory while the wire still moves it. A
  // hold of our own (no implicit dependencies: the task orders the data)
  // keeps it until the wire is done. A send's read hold comes at once; a
  // receive's write hold once the task has let go.
  starpu_data_acquire_on_node_cb_sequential_consistency(STARPU_TASK_GET_HANDLE(a->task, 0), a->node,
                                                        a->send ? STARPU_R : STARPU_W, channel_buffer_acquired, a, 0);
}

void epilogue_task_body(void** buffers, void* cl_arg) {
  auto* a = static_cast<EpilogueArg*>(cl_arg);
  RunState* r = a->run;
  const int i = a->index;
  r->epi_worker[i] = starpu_worker_get_id();
  r->running.fetch_add(1);
  r->epi_start[i] = r->now();
  EpilogueIo io;  // the state bytes it reads and writes (DataPlanOptions::state_bytes)
  const DataPlan& p = *a->plan;
  for (size_t b = 0; b < p.access[a->node].size(); ++b) {
    const HandleSpec& h = p.handles[p.access[a->node][b].handle];
    if (!h.vector) continue;
    void* ptr = reinterpret_cast<void*>(STARPU_VECTOR_GET_PTR(buffers[b]));
    if (h.kind == HandleKind::Accumulator) io.accumulators.push_back({h.slot / p.tp, ptr});
    if (h.kind == HandleKind::Version) io.version = ptr;
  }
  if (!r->abort.load()) {  // an aborted run (a failed pass) skips the step too
    current_epilogue_io = &io;
    const int S = r->g->spec().stages, e = a->install_of;
    std::string err = e < 0 ? run_guarded([&] { (*r->epilogue)(i); }, epilogue_name(i, S, r->tp))
                            : run_guarded([&] { (*r->install)(e, a->device); },
                                          fmt::format("install of {} on device {}", epilogue_name(e, S, 1), a->device));
    current_epilogue_io = nullptr;
    if (!err.empty()) r->fail(std::move(err));
  }
}

void epilogue_ended(void* arg) {
  auto* a = static_cast<EpilogueArg*>(arg);
  a->run->ended(a->run->epi_end[a->index]);
}

}  // namespace rrfp
