#include "train/mpi_train.hpp"

#include <cstring>

#include <fmt/format.h>

namespace rrfp::train {

MpiTrainPlan mpi_train_plan(const Hint& hint, const std::vector<Pipeline*>& pipes, int K, int rank,
                            std::vector<std::int64_t> shape) {
  const TaskGraph& g = *hint.graph;
  if (g.spec().pipelines() != 1)
    throw SpecError("multi-rank training needs one pipeline (a stage on one device); not " + hint.name);
  MpiTrainPlan plan;
  const int T = static_cast<int>(pipes.size()), n = g.size();
  plan.local_stage.assign(g.spec().stages, 0);
  for (int s = 0; s < g.spec().stages; ++s)
    for (int t = 0; t < T; ++t) plan.local_stage[s] |= (g.spec().device_of(s, 0) * T + t) / K == rank;
  plan.loss_rank = g.spec().device_of(g.spec().stages - 1, 0) * T / K;
  std::int64_t elems = 1;
  for (auto x : shape) elems *= x;
  const std::size_t bytes = static_cast<std::size_t>(elems) * sizeof(float);
  const TaskGraph* gp = &g;
  // The producer of the k-th input of member task `c` (member * n + task),
  // and the member's pipeline, which holds the tensor it hands over.
  auto producer = [gp, n](int c, int k) { return gp->task(gp->preds(c % n).begin()[k]); };
  auto pipe_of = [pipes, n](int c) { return pipes[c / n]; };
  plan.mopt.devices_per_rank = K;
  plan.mopt.payload.bytes = [bytes](int, int) { return bytes; };
  plan.mopt.payload.pack = [pipe_of, producer, bytes](int c, int k, void* dst) {
    const Task t = producer(c, k);
    Pipeline* p = pipe_of(c);
    torch::Tensor x = (t.kind == Kind::F ? p->output_of(t.stage, t.mb) : p->input_grad_of(t.stage, t.mb))
                          .detach()
                          .to(torch::kFloat32)
                          .contiguous();
    if (static_cast<std::size_t>(x.numel()) * sizeof(float) != bytes)
      throw std::runtime_error(fmt::format("message of stage {} microbatch {} has {} elements, expected {}", t.stage,
                                           t.mb, x.numel(), bytes / sizeof(float)));
    std::memcpy(dst, x.data_ptr<float>(), bytes);
  };
  plan.mopt.payload.unpack = [pipe_of, producer, shape](int c, int k, const void* src) {
    const Task t = producer(c, k);
    Pipeline* p = pipe_of(c);
    torch::Tensor x =
        torch::from_blob(const_cast<void*>(src), shape, torch::TensorOptions().dtype(torch::kFloat32)).clone();
    if (t.kind == Kind::F)
      p->set_output(t.stage, t.mb, std::move(x));
    else
      p->set_input_grad(t.stage, t.mb, std::move(x));
  };
  return plan;
}

}  // namespace rrfp::train
