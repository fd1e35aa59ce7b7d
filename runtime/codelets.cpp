#include "runtime/codelets.hpp"

#include "codelets/splitmix.hpp"
#include "runtime/executor.hpp"
#include "runtime/run_state.hpp"
#include "runtime/task_bodies.hpp"

namespace rrfp {

namespace {

// Stage, message size and the workload (the model, the bench's costs)
// decide a pass's duration (with its kind, which picks the model): the
// footprint hashes the three, size_base is the size.
uint32_t pass_footprint(starpu_task* task) {
  const auto* a = static_cast<const TaskArg*>(task->cl_arg);
  const std::uint32_t workload = static_cast<const RunState*>(a->owner)->workload_key;
  return starpu_hash_crc32c_be(static_cast<uint32_t>(a->stage),
                               starpu_hash_crc32c_be_n(&a->message_bytes, sizeof a->message_bytes, workload));
}
size_t pass_size(starpu_task* task, unsigned) { return static_cast<const TaskArg*>(task->cl_arg)->message_bytes; }

// An epilogue's (or an install's) cl_arg is an EpilogueArg.
uint32_t epilogue_footprint(starpu_task* task) {
  const auto* a = static_cast<const EpilogueArg*>(task->cl_arg);
  return starpu_hash_crc32c_be(static_cast<uint32_t>(a->index), a->run->workload_key);
}

starpu_perfmodel make_model(const char* symbol, uint32_t (*fp)(starpu_task*)) {
  starpu_perfmodel m{};
  m.type = STARPU_HISTORY_BASED;
  m.symbol = symbol;
  m.footprint = fp;
  if (fp == pass_footprint) m.size_base = pass_size;
  return m;
}

// gpu_async: on a CUDA worker the task ends when the work the function
// enqueued on the worker's stream is done (passes, epilogues, channel
// tasks, releases); else when the function returns (the emulated wire's
// link tasks).
starpu_codelet make_codelet(const char* name, void (*fn)(void**, void*), starpu_perfmodel* model, bool gpu_async = true) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.where = STARPU_CPU;
  cl.cpu_funcs[0] = fn;
  cl.cpu_funcs_name[0] = name;
#ifdef STARPU_USE_CUDA
  cl.where |= STARPU_CUDA;
  cl.cuda_funcs[0] = fn;
  cl.cuda_flags[0] = gpu_async ? STARPU_CUDA_ASYNC : 0;
#else
  (void)gpu_async;
#endif
  cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
  cl.name = name;
  cl.model = model;
  return cl;
}

struct Codelets {
  starpu_perfmodel model[4] = {make_model("rrfp_F", pass_footprint), make_model("rrfp_B", pass_footprint),
                               make_model("rrfp_W", pass_footprint), make_model("rrfp_BW", pass_footprint)};
  starpu_perfmodel epi_model = make_model("rrfp_epilogue", epilogue_footprint);
  starpu_codelet pass[4] = {make_codelet("rrfp_F", graph_task_body, &model[0]),
                            make_codelet("rrfp_B", graph_task_body, &model[1]),
                            make_codelet("rrfp_W", graph_task_body, &model[2]),
                            make_codelet("rrfp_BW", graph_task_body, &model[3])};
  // The link only holds its data for the wire's delay: no model (StarPU
  // treats it as free).
  starpu_codelet link = make_codelet("rrfp_link", link_task_body, nullptr, false);
  starpu_codelet epilogue = make_codelet("rrfp_epilogue", epilogue_task_body, &epi_model);
  // An install of a stage's updated weights on another rank (AMDP): a
  // copy, not an optimizer step, so a model of its own.
  starpu_perfmodel install_model = make_model("rrfp_install", epilogue_footprint);
  starpu_codelet install = make_codelet("rrfp_install", epilogue_task_body, &install_model);
  // A channel's tasks hand their buffer to the wire and return; the wire
  // ends them (MessageChannels). On a CPU worker a host buffer (MPI's
  // wire), on a CUDA worker one on its GPU (NCCL's, gpu/nccl_wire.hpp).
  // Asynchronous on a GPU like the release below, though they enqueue
  // nothing: StarPU holds a synchronous CUDA task until the worker's
  // previous passes are done, which would delay every send by a pass (a
  // receive still waits for them: docs/gpu.md, "Ordered channels over NCCL").
  starpu_codelet channel_send = make_codelet("rrfp_send", channel_task_body, nullptr);
  starpu_codelet channel_receive = make_codelet("rrfp_receive", channel_task_body, nullptr);
  starpu_codelet release = [] {
    starpu_codelet c = make_codelet("rrfp_link_release", release_task_body, nullptr);
    c.nbuffers = 0;
    return c;
  }();
};

// Lives as long as the process: StarPU keeps pointers to the models and
// writes them out at shutdown.
Codelets& codelets() {
  static Codelets c;
  return c;
}

}  // namespace

IterationMark::IterationMark(long iteration, int microbatch) : on_(iteration >= 0) {
  if (!on_) return;
  starpu_iteration_push(static_cast<unsigned long>(iteration));
  starpu_iteration_push(static_cast<unsigned long>(microbatch));
}

IterationMark::~IterationMark() {
  if (!on_) return;
  starpu_iteration_pop();
  starpu_iteration_pop();
}

void IterationMark::clear() {
  starpu_iteration_push(static_cast<unsigned long>(-1));  // sets the first level to -1
  starpu_iteration_pop();                                 // and clears the second
}

std::uint32_t workload_key_of(const std::string& description) {
  const std::uint64_t h = fnv1a64(description.data(), description.size());
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

starpu_codelet* pass_codelet(Kind k) { return &codelets().pass[static_cast<int>(k)]; }
starpu_codelet* link_codelet() { return &codelets().link; }
starpu_codelet* epilogue_codelet() { return &codelets().epilogue; }
starpu_codelet* install_codelet() { return &codelets().install; }
starpu_codelet* release_codelet() { return &codelets().release; }
starpu_codelet* channel_send_codelet() { return &codelets().channel_send; }
starpu_codelet* channel_receive_codelet() { return &codelets().channel_receive; }
std::vector<const starpu_codelet*> pass_codelets() {
  Codelets& c = codelets();
  return {&c.pass[0], &c.pass[1], &c.pass[2], &c.pass[3]};
}

}  // namespace rrfp
