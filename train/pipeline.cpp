#include "train/pipeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/engine.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "train/blas.hpp"
#include "train/cuda_stream.hpp"

namespace rrfp::train {

using torch::autograd::impl::gradient_edge;

std::vector<Microbatch> make_microbatches(const std::vector<std::uint8_t>& windows, int M, int b, int T) {
  const int64_t w = T + 1;
  if (static_cast<int64_t>(windows.size()) != int64_t{M} * b * w)
    throw std::invalid_argument("make_microbatches: window bytes do not match M * b * (T + 1)");
  auto all = torch::from_blob(const_cast<std::uint8_t*>(windows.data()), {int64_t{M} * b, w}, torch::kUInt8)
                 .to(torch::kInt64);
  std::vector<Microbatch> out;
  for (int m = 0; m < M; ++m) {
    auto rows = all.slice(0, int64_t{m} * b, int64_t{m + 1} * b);
    out.push_back({rows.slice(1, 0, T).contiguous(), rows.slice(1, 1, w).contiguous(), {}, {}});
  }
  return out;
}

Pipeline::Pipeline(const Model& model, int model_stages, int microbatches, bool deterministic,
                   const std::vector<int>& counts)
    : model_(&model), M_(microbatches), det_(deterministic) {
  install_memory_accounting();
  const auto ranges = model.partition(model_stages, counts);
  for (int s = 0; s < model_stages; ++s) {
    stages_.emplace_back(model, ranges[s], s == 0, s + 1 == model_stages);
    mem_.push_back(std::make_shared<MemCounter>());
    std::unordered_map<const void*, int> index;
    const auto& ps = stages_.back().params();
    for (size_t i = 0; i < ps.size(); ++i) index[ps[i].t.unsafeGetTensorImpl()] = static_cast<int>(i);
    param_index_.push_back(std::move(index));
  }
  acc_mu_ = std::make_unique<std::mutex[]>(model_stages);
  peak_ = std::make_unique<std::atomic<std::int64_t>[]>(model_stages);
}

Pipeline::~Pipeline() {
  // Free autograd state before the counters it is charged to go away.
  slots_.clear();
}

void Pipeline::begin_step(std::vector<Microbatch> mbs) {
  if (static_cast<int>(mbs.size()) != M_)
    throw std::invalid_argument(fmt::format("begin_step: {} microbatches, expected {}", mbs.size(), M_));
  mbs_ = std::move(mbs);
  for (Microbatch& mb : mbs_) to_device(mb, device_);
  slots_.assign(static_cast<size_t>(stages()) * M_, Slot{});
  losses_.assign(M_, 0.0f);
  if (acc_.size() != static_cast<size_t>(stages())) acc_.assign(stages(), {});
  acc_count_.assign(stages(), 0);
  acc_base_.assign(stages(), 0);
  acc_live_.assign(stages(), 0);
  local_mb_.resize(stages());
  if (det_) early_.assign(static_cast<size_t>(stages()) * M_, {});
  for (int s = 0; s < stages(); ++s) peak_[s].store(0);
  for (int d = 0; d < devices_; ++d) device_peak_[d].store(0);
}

void Pipeline::check_order(bool ok, const char* what, int s, int m) const {
  if (!ok) throw std::logic_error(fmt::format("pass order violated: {} of stage {} microbatch {}", what, s, m));
}

void one_intra_op_thread() {
  static thread_local bool single = (torch::set_num_threads(1), blas_single_thread(), true);
  (void)single;
}

void warm_worker() {
  one_intra_op_thread();
  torch::NoGradGuard no_graph;
  const torch::Tensor a = torch::ones({64, 64});
  (void)torch::mm(a, a).sum().item<float>();
}

void Pipeline::run(Kind k, int s, int m, const void* in, void* out) {
  one_intra_op_thread();
  switch (k) {
    case Kind::F: return forward(s, m, in, out);
    case Kind::B: return backward_input(s, m, in, out);
    case Kind::W: return backward_weight(s, m);
    case Kind::BW: return backward_full(s, m, in, out);
  }
}

torch::Tensor Pipeline::view_message(const void* buf) const {
  if (msg_shape_.empty()) throw std::logic_error("a message buffer but no message shape (Pipeline::set_message_shape)");
  return torch::from_blob(const_cast<void*>(buf), msg_shape_,
                          torch::TensorOptions().dtype(torch::kFloat32).device(device_));
}

void Pipeline::write_message(void* buf, const torch::Tensor& t, const char* what, int s, int m) const {
  torch::Tensor dst = view_message(buf);
  if (t.sizes() != dst.sizes())
    throw std::runtime_error(fmt::format("{} of stage {} microbatch {} has shape {}, its message handle holds {}", what,
                                         s, m, fmt::join(t.sizes().vec(), "x"), fmt::join(msg_shape_, "x")));
  torch::NoGradGuard g;
  dst.copy_(t.detach());
}

void Pipeline::forward(int s, int m, const void* in, void* out) {
  Slot& sl = slot(s, m);
  {
    ChargeScope charge(mem_[static_cast<size_t>(s) * pipes_ + pipe_of(m)]);
    if (s > 0 && in) {
      // The activation handle StarPU delivered, viewed: its host buffer lives
      // until the run ends; a GPU copy StarPU may evict before B, so copy it.
      torch::Tensor x = view_message(in);
      sl.input = (x.is_cuda() ? x.clone() : x).requires_grad_(true);
    } else if (s > 0) {
      Slot& prev = slot(s - 1, m);
      check_order(prev.output.defined(), "F before the previous stage's F", s, m);
      // The copy stands for the transfer between devices: the received
      // activation belongs to this stage.
      sl.input = prev.output.detach().clone().requires_grad_(true);
    }
    torch::Tensor y;
    {
      sl.tape.clear();
      LinearTape tape(&sl.tape);  // what W needs to skip autograd (linear_tape.hpp)
      y = stages_[s].forward(sl.input, mbs_[m]);
    }
    if (stages_[s].last()) {
      torch::Tensor l = Model::loss(y, mbs_[m].targets);
      losses_[m] = l.item<float>();
      // The iteration's loss is the mean over microbatches.
      y = l / static_cast<double>(group_ > 0 ? group_ : M_);
    }
    sl.output = y;
    if (out && !stages_[s].last()) write_message(out, y, "the output", s, m);
  }
  auto live = [&](int t, int p) { return mem_[static_cast<size_t>(t) * pipes_ + p]->live.load(); };
  std::int64_t stage_live = 0;  // every copy of the stage
  for (int p = 0; p < pipes_; ++p) stage_live += live(s, p);
  std::int64_t p = peak_[s].load();
  while (stage_live > p && !peak_[s].compare_exchange_weak(p, stage_live)) {
  }
  if (placement_.empty()) return;
  const int d = placement_[pipe_of(m)][s];
  std::int64_t on_device = 0;
  for (int q = 0; q < pipes_; ++q)
    for (int t = 0; t < stages(); ++t)
      if (placement_[q][t] == d) on_device += live(t, q);
  std::int64_t q = device_peak_[d].load();
  while (on_device > q && !device_peak_[d].compare_exchange_weak(q, on_device)) {
  }
}

void Pipeline::set_placement(std::vector<std::vector<int>> placement, std::vector<int> mb_pipeline) {
  const int P = static_cast<int>(placement.size());
  bool ok = P >= 1 && (mb_pipeline.empty() || static_cast<int>(mb_pipeline.size()) == M_);
  for (const auto& row : placement) ok = ok && static_cast<int>(row.size()) == stages();
  for (int p : mb_pipeline) ok = ok && p >= 0 && p < P;
  if (!ok) throw std::invalid_argument("set_placement: one device per stage and pipeline, one pipeline per microbatch");
  devices_ = 0;
  for (const auto& row : placement)
    for (int d : row) devices_ = std::max(devices_, d + 1);
  placement_ = std::move(placement);
  mb_pipeline_ = std::move(mb_pipeline);
  pipes_ = P;
  mem_.clear();
  for (int i = 0; i < stages() * P; ++i) mem_.push_back(std::make_shared<MemCounter>());
  device_peak_ = std::make_unique<std::atomic<std::int64_t>[]>(devices_);
  for (int d = 0; d < devices_; ++d) device_peak_[d].store(0);
}

std::vector<std::int64_t> Pipeline::peak_activation_per_device() const {
  std::vector<std::int64_t> out(devices_);
  for (int d = 0; d < devices_; ++d) out[d] = device_peak_[d].load();
  return out;
}

void Pipeline::take_grad_out(int s, int m, const void* in) {
  Slot& sl = slot(s, m);
  if (sl.grad_out.defined()) return;
  if (in && !stages_[s].last()) {
    sl.grad_out = view_message(in);
  } else if (stages_[s].last()) {
    sl.grad_out = torch::ones_like(sl.output);
  } else {
    Slot& next = slot(s + 1, m);
    check_order(next.grad_in.defined(), "backward before the next stage's backward", s, m);
    sl.grad_out = std::move(next.grad_in);
    next.grad_in = torch::Tensor();
  }
}

// One autograd pass from the stage output (seeded with grad_out) to the
// stage input, when it has one (stage 0's input is token ids), then `wrt`;
// the graph is freed. Unreached edges come back undefined.
std::vector<torch::Tensor> Pipeline::backward_to(int s, const Slot& sl, torch::autograd::edge_list wrt) {
  if (s > 0) wrt.insert(wrt.begin(), gradient_edge(sl.input));
  return torch::autograd::Engine::get_default_engine().execute({gradient_edge(sl.output)}, {sl.grad_out},
                                                              /*keep_graph=*/false, /*create_graph=*/false,
                                                              /*accumulate_grad=*/false, wrt);
}

// B: autograd runs once, for the stage input's gradient, dz of every linear
// output recorded in F, and the parameters that are not linear weights
// (norms, embeddings, biases added outside a linear). The graph is freed;
// what W needs (each linear's input x and dz) stays in the slot.
void Pipeline::backward_input(int s, int m, const void* in, void* out) {
  Slot& sl = slot(s, m);
  check_order(sl.output.defined(), "B before F", s, m);
  take_grad_out(s, m, in);
  // Parameters that no recorded linear owns get their gradient here.
  const auto& params = stages_[s].params();
  std::vector<unsigned char> taped(params.size(), 0);
  for (const TapeEntry& e : sl.tape) {
    taped[index_of(s, e.w)] = 1;
    if (e.b.defined() && e.b.requires_grad()) taped[index_of(s, e.b)] = 1;
  }
  sl.other.clear();
  for (size_t p = 0; p < params.size(); ++p)
    if (!taped[p]) sl.other.push_back(static_cast<int>(p));
  // Graph edges as the inputs: the recorded linear outputs are not kept as tensors.
  torch::autograd::edge_list wrt;
  for (const TapeEntry& e : sl.tape) wrt.push_back(e.z);
  for (int p : sl.other) wrt.push_back(gradient_edge(params[p].t));
  auto g = backward_to(s, sl, wrt);
  size_t at = 0;
  if (s > 0) sl.grad_in = g[at++];
  sl.dz.clear();
  for (TapeEntry& e : sl.tape) {
    sl.dz.push_back(g[at++]);
    e.z = torch::autograd::Edge();  // the graph is freed
  }
  sl.other_grads.clear();
  for (size_t i = 0; i < sl.other.size(); ++i) sl.other_grads.push_back(g[at++]);
  sl.input = sl.output = sl.grad_out = torch::Tensor();
  sl.b_done = true;
  if (out && s > 0) write_message(out, sl.grad_in, "the input gradient", s, m), sl.grad_in = torch::Tensor();
}

// W: the weight gradients of the recorded linears, by hand (no autograd),
// then all of the stage's gradients are accumulated.
void Pipeline::backward_weight(int s, int m) {
  Slot& sl = slot(s, m);
  check_order(sl.b_done, "W before B", s, m);
  // The tape's inputs x are activations that require grad: without this
  // guard every dW = dz^T x would record a graph holding x (every linear's
  // input of every microbatch) alive in the gradient buffers until the step
  // ends, and W would pay for building it.
  torch::NoGradGuard no_graph;
  const auto& params = stages_[s].params();
  std::vector<torch::Tensor> grads(params.size());
  auto add = [&](int p, torch::Tensor g) {
    if (!g.defined()) return;
    grads[p] = grads[p].defined() ? grads[p] + g : std::move(g);
  };
  for (size_t i = 0; i < sl.other.size(); ++i) add(sl.other[i], std::move(sl.other_grads[i]));
  for (size_t i = 0; i < sl.tape.size(); ++i) {
    const TapeEntry& e = sl.tape[i];
    if (!sl.dz[i].defined()) continue;  // an output the loss does not depend on
    add(index_of(s, e.w), linear_weight_grad(e, sl.dz[i]));
    if (e.b.defined() && e.b.requires_grad()) add(index_of(s, e.b), linear_bias_grad(sl.dz[i]));
  }
  for (size_t p = 0; p < grads.size(); ++p)
    if (!grads[p].defined()) grads[p] = torch::zeros_like(params[p].t);
  sl.tape.clear();
  sl.dz.clear();
  sl.other_grads.clear();
  sl.b_done = false;
  accumulate(s, m, std::move(grads));
}

// BW: one autograd pass for the input and every parameter, as the plain
// loop's backward, so each dW is computed while its dz is still in cache
// (B then W kept every dz of the stage alive in between: 3-5% slower on the
// fast BLAS). Autograd's linear backward makes the same products as W's
// (linear_tape.hpp), so fused and split backward stay bitwise equal.
void Pipeline::backward_full(int s, int m, const void* in, void* out) {
  Slot& sl = slot(s, m);
  check_order(sl.output.defined(), "BW before F", s, m);
  take_grad_out(s, m, in);
  const auto& params = stages_[s].params();
  torch::autograd::edge_list wrt;
  for (const auto& p : params) wrt.push_back(gradient_edge(p.t));
  auto g = backward_to(s, sl, wrt);
  size_t at = 0;
  if (s > 0) sl.grad_in = g[at++];
  std::vector<torch::Tensor> grads(g.begin() + static_cast<std::ptrdiff_t>(at), g.end());
  for (size_t p = 0; p < grads.size(); ++p)
    if (!grads[p].defined()) grads[p] = torch::zeros_like(params[p].t);
  sl.input = sl.output = sl.grad_out = torch::Tensor();
  sl.tape.clear();
  if (out && s > 0) write_message(out, sl.grad_in, "the input gradient", s, m), sl.grad_in = torch::Tensor();
  accumulate(s, m, std::move(grads));
}

int Pipeline::index_of(int s, const torch::Tensor& param) const {
  const auto& idx = param_index_[s];
  auto it = idx.find(param.unsafeGetTensorImpl());
  if (it == idx.end())
    throw std::logic_error(fmt::format("stage {} ran a linear layer whose weight is not one of its parameters", s));
  return it->second;
}

void Pipeline::add_to_sum(int s, std::vector<torch::Tensor>& grads) {
  auto& acc = acc_[s];
  // The first microbatch is copied, not kept: a returned gradient may share
  // storage with autograd state. The buffers are made once, by the first step.
  ++acc_count_[s];
  if (std::exchange(acc_live_[s], 1)) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i].add_(grads[i]);
  } else if (!acc.empty()) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i].copy_(grads[i]);
  } else {
    for (auto& t : grads) acc.push_back(t.clone());
  }
}

// A stage with copies on several devices (Chimera's mirrors; AMDP, which
// sets no placement) adds its sums on GPUs from several streams, which the
// lock does not order: each adder waits for its stream before unlocking,
// and a gradient kept for another stream is complete first. -1: no wait.
int Pipeline::shared_sum_gpu(int s, const std::vector<torch::Tensor>& grads) const {
  if (grads.empty() || !grads[0].is_cuda()) return -1;
  for (const auto& row : placement_)
    if (row[s] != placement_[0][s]) return grads[0].get_device();
  return placement_.empty() ? grads[0].get_device() : -1;
}

void Pipeline::accumulate(int s, int m, std::vector<torch::Tensor> grads) {
  std::lock_guard<std::mutex> g(acc_mu_[s]);
  const int gpu = shared_sum_gpu(s, grads);
  if (!det_) {
    add_to_sum(s, grads);
    return wait_for_current_stream(gpu);
  }
  // Microbatch order within the stage's current group (all M without groups).
  skip_foreign(s);
  if (m != acc_base_[s] + acc_count_[s]) {  // ahead of its turn: wait for the microbatches before it
    wait_for_current_stream(gpu);
    early_[static_cast<size_t>(s) * M_ + m] = std::move(grads);
    return;
  }
  add_to_sum(s, grads);
  add_early(s);
  wait_for_current_stream(gpu);
}

void Pipeline::add_early(int s) {
  const int group = group_ > 0 ? group_ : M_;
  auto early = [&](int mb) -> std::vector<torch::Tensor>& { return early_[static_cast<size_t>(s) * M_ + mb]; };
  skip_foreign(s);
  while (acc_count_[s] < group && !early(acc_base_[s] + acc_count_[s]).empty()) {
    auto next = std::exchange(early(acc_base_[s] + acc_count_[s]), {});
    add_to_sum(s, next);
    wait_for_current_stream(shared_sum_gpu(s, next));  // read before its memory returns to its stream
    skip_foreign(s);
  }
}

void Pipeline::skip_foreign(int s) {
  const auto& local = local_mb_[s];
  const int group = group_ > 0 ? group_ : M_;
  while (!local.empty() && acc_count_[s] < group && !local[acc_base_[s] + acc_count_[s]]) ++acc_count_[s];
}

void Pipeline::set_local_microbatches(int s, std::vector<unsigned char> local) {
  if (!local.empty() && static_cast<int>(local.size()) != M_)
    throw std::invalid_argument(fmt::format("set_local_microbatches: {} entries, expected {}", local.size(), M_));
  local_mb_.resize(stages());
  local_mb_[s] = std::move(local);
}

void Pipeline::add_partial_sum(int s, int first_mb, std::vector<torch::Tensor> partial) {
  std::lock_guard<std::mutex> g(acc_mu_[s]);
  if (det_) {
    if (first_mb < acc_base_[s] + acc_count_[s])
      throw std::logic_error(fmt::format("stage {}: a partial sum up to microbatch {} arrived after microbatch {}", s,
                                         first_mb, acc_base_[s] + acc_count_[s]));
    acc_[s] = std::move(partial);
    acc_count_[s] = first_mb - acc_base_[s];
    acc_live_[s] = 1;
    add_early(s);
    return;
  }
  for (size_t i = 0; i < acc_[s].size() && acc_live_[s]; ++i) partial[i].add_(acc_[s][i]);
  acc_[s] = std::move(partial);
  acc_count_[s] = std::max(acc_count_[s], 1);
  acc_live_[s] = 1;
}

void Pipeline::set_stage_sum(int s, std::vector<torch::Tensor> sum) {
  std::lock_guard<std::mutex> g(acc_mu_[s]);
  acc_[s] = std::move(sum);
  acc_count_[s] = group_ > 0 ? group_ : M_;
  acc_live_[s] = 1;
}

std::vector<torch::Tensor> Pipeline::stage_grads(int s) const {
  const int group = group_ > 0 ? group_ : M_;
  if (det_ && acc_count_[s] != group)
    throw std::logic_error(fmt::format("stage {} microbatch {} has no gradient", s, acc_base_[s] + acc_count_[s]));
  return acc_live_[s] ? acc_[s] : std::vector<torch::Tensor>{};
}

void Pipeline::set_update_group(int g) {
  if (g < 1 || M_ % g != 0)
    throw std::invalid_argument(fmt::format("set_update_group: {} microbatches do not split into groups of {}", M_, g));
  group_ = g;
}

void Pipeline::next_group(int s) {
  std::lock_guard<std::mutex> g(acc_mu_[s]);
  acc_count_[s] = 0;  // the next group's first gradient overwrites the sums
  acc_live_[s] = 0;
  acc_base_[s] += group_;
}

double Pipeline::group_loss(int k) const {
  double sum = 0;
  for (int m = k * group_; m < (k + 1) * group_; ++m) sum += losses_[m];
  return sum / group_;
}

double Pipeline::loss() const {
  double sum = 0;
  for (float l : losses_) sum += l;
  return sum / M_;
}

std::vector<std::int64_t> Pipeline::peak_activation_bytes() const {
  std::vector<std::int64_t> out(stages());
  for (int s = 0; s < stages(); ++s) out[s] = peak_[s].load();
  return out;
}

std::int64_t Pipeline::grad_buffer_bytes() const {
  std::int64_t b = 0;
  for (const auto& v : acc_)
    for (const auto& t : v) b += t.numel() * static_cast<std::int64_t>(t.element_size());
  return b;
}

}  // namespace rrfp::train
