#include "train/tp_model.hpp"
#include "train/linear_tape.hpp"

#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

#include "graph/pipeline_spec.hpp"
#include "train/mm_model.hpp"

namespace rrfp::train {

namespace {

thread_local TpTaskScope::Context* current = nullptr;
std::atomic<TpTaskScope::Context*> in_flight{nullptr};  // the process's latest scope, for the autograd thread

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// f: identity forward, all-reduce of the gradient backward.
struct CopyToMembers : torch::autograd::Function<CopyToMembers> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x) { return x.clone(); }
  static variable_list backward(AutogradContext*, variable_list g) {
    torch::Tensor t = g[0].contiguous().clone();
    tp_allreduce(t);
    return {t};
  }
};

// g: all-reduce forward, identity backward.
struct ReduceFromMembers : torch::autograd::Function<ReduceFromMembers> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x) {
    torch::Tensor t = x.contiguous().clone();
    tp_allreduce(t);
    return t;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

torch::Tensor tp_block(const BlockParams& b, const torch::Tensor& x, int64_t heads_local, int64_t dh,
                       const torch::Tensor& masked) {
  const int64_t d = x.size(2);
  auto h = CopyToMembers::apply(torch::layer_norm(x, {d}, b.ln1_w, b.ln1_b));
  auto y = self_attention(h, b.qkv_w, b.qkv_b, heads_local, dh, masked);  // local heads only
  auto x1 = x + ReduceFromMembers::apply(tape_linear(y, b.proj_w)) + b.proj_b;
  if (!b.fc1_w.defined()) return x1;  // attention-only block (--mlp-widths 0): one all-reduce each way
  auto h2 = CopyToMembers::apply(torch::layer_norm(x1, {d}, b.ln2_w, b.ln2_b));
  auto a = torch::gelu(tape_linear(h2, b.fc1_w, b.fc1_b));
  return x1 + ReduceFromMembers::apply(tape_linear(a, b.fc2_w)) + b.fc2_b;
}

ShardSpec shard_spec(const std::string& n) {
  // Only a transformer block's ("block3.fc1.w", mm-tiny's "vis.block0.qkv.w"):
  // mm-tiny's vision projector "vis.proj.w" is copied, not split.
  if (n.rfind("block", 0) != 0 && n.rfind("vis.block", 0) != 0) return {};
  if (ends_with(n, "qkv.w") || ends_with(n, "qkv.b")) return {0, true};
  if (ends_with(n, "fc1.w") || ends_with(n, "fc1.b")) return {0, false};
  if (ends_with(n, "proj.w") || ends_with(n, "fc2.w")) return {1, false};
  return {};
}

torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& s, int member, int members) {
  torch::NoGradGuard ng;
  if (s.dim < 0) return full.detach().clone();
  if (!s.qkv) return full.detach().chunk(members, s.dim)[member].contiguous();
  auto thirds = full.detach().chunk(3, 0);
  std::vector<torch::Tensor> parts;
  for (auto& t : thirds) parts.push_back(t.chunk(members, 0)[member]);
  return torch::cat(parts, 0).contiguous();
}

torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& s) {
  torch::NoGradGuard ng;
  if (s.dim < 0) return shards.at(0).detach().clone();
  if (!s.qkv) return torch::cat(shards, s.dim);
  std::vector<torch::Tensor> parts;
  for (int third = 0; third < 3; ++third)
    for (const auto& t : shards) parts.push_back(t.detach().chunk(3, 0)[third]);
  return torch::cat(parts, 0);
}

GptTpShard::GptTpShard(const GptModel& full, int members, int member)
    : cfg_(full.config()), T_(members), member_(member) {
  if (members < 1 || member < 0 || member >= members) throw std::invalid_argument("GptTpShard: bad member");
  if (cfg_.heads % members != 0 || cfg_.d_model % members != 0)
    throw SpecError(fmt::format("--tensor-parallel {} must divide the heads ({}) and the width ({})", members,
                                cfg_.heads, cfg_.d_model));
  for (int i = 0; i < cfg_.layers; ++i)
    if (cfg_.mlp_width(i) % members != 0)
      throw SpecError(fmt::format("--tensor-parallel {} must divide block {}'s MLP width ({})", members, i,
                                  cfg_.mlp_width(i)));
  for (const NamedParam& p : full.all_params())
    params_.push_back({p.name, shard_of(p.t, shard_spec(p.name), member, members).requires_grad_(true)});
  // Same order as GptModel: tok_emb, pos_emb, 12 per block (6 without an
  // MLP: --mlp-widths 0), lnf.w, lnf.b, head.w, head.b.
  tok_emb_ = params_[0].t, pos_emb_ = params_[1].t;
  std::size_t at = 2;
  for (int i = 0; i < cfg_.layers; ++i) {
    block_param_begin_.push_back(at);
    blocks_.push_back(block_at(params_, at, cfg_.mlp_width(i) > 0));
  }
  block_param_begin_.push_back(at);
  const std::size_t e = params_.size();
  if (e != block_param_begin_.back() + 4) throw std::logic_error("GptTpShard: unexpected parameter layout");
  head_ = {params_[e - 4].t, params_[e - 3].t, params_[e - 2].t, params_[e - 1].t};
  // On the shards' device (the full model's: a GPU with --cuda).
  causal_mask_ = torch::ones({cfg_.seq_len, cfg_.seq_len}, torch::dtype(torch::kBool).device(tok_emb_.device())).triu(1);
}

std::vector<NamedParam> GptTpShard::stage_params(const StageRange& r, bool first, bool last) const {
  return gpt_stage_params(params_, block_param_begin_, r, first, last);
}

torch::Tensor GptTpShard::stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                                        const Microbatch& mb) const {
  // At the microbatch's length, as GptModel's (so are its all-reduces).
  torch::Tensor x = gpt_stage_input(tok_emb_, pos_emb_, first, input, mb);
  const int64_t T = x.size(1), dh = cfg_.d_model / cfg_.heads;
  auto masked = causal_mask_.slice(0, 0, T).slice(1, 0, T);
  for (int i = r.first; i < r.last; ++i) x = tp_block(blocks_[i], x, cfg_.heads / T_, dh, masked);
  return last ? head_.forward(x) : gpt_stage_output(x, cfg_.seq_len);
}

void check_tp_stages(const Model& model, const std::vector<StageRange>& stages) {
  const int most = kMaxCollectivesPerTask / 2;  // a pass (F, B or BW) runs at most 2 all-reduces a block
  for (size_t s = 0; s < stages.size(); ++s) {
    const int blocks = model.blocks_in(stages[s], s == 0);
    if (blocks > most)
      throw SpecError(fmt::format("--tensor-parallel: stage {} holds {} transformer blocks, more than the {} whose "
                                  "all-reduces one task may run{}",
                                  s, blocks, most,
                                  dynamic_cast<const MmModel*>(&model) && s == 0
                                      ? " (mm-tiny's vision encoder is one stage: fewer --enc-layers)"
                                      : " (more --stages, or another --partition)"));
  }
}

std::unique_ptr<Model> tp_member(const Model& full, int members, int member) {
  if (const auto* mm = dynamic_cast<const MmModel*>(&full)) return std::make_unique<MmModel>(*mm, members, member);
  if (const auto* gpt = dynamic_cast<const GptModel*>(&full)) return std::make_unique<GptTpShard>(*gpt, members, member);
  throw std::logic_error("tp_member: a model without tensor-parallel blocks");
}

TpTaskScope::TpTaskScope(TpComm* comm, int group, int member, int task) : ctx_{comm, group, member, task, 0} {
  current = &ctx_;
  in_flight.store(&ctx_);
}

TpTaskScope::~TpTaskScope() {
  current = nullptr;
  Context* mine = &ctx_;
  in_flight.compare_exchange_strong(mine, nullptr);
}

void tp_allreduce(torch::Tensor& t) {
  TpTaskScope::Context* c = current;
  if (!c && t.is_cuda()) c = in_flight.load();  // on LibTorch's autograd thread of the GPU
  if (!c) throw std::logic_error("tensor-parallel all-reduce outside a task (no TpTaskScope on this thread)");
  if (c->next >= kMaxCollectivesPerTask)  // check_tp_stages refuses what could get here
    throw std::logic_error(fmt::format("more than {} all-reduces in one task", kMaxCollectivesPerTask));
  const std::int64_t id = collective_id(c->task, c->next++);
  if (t.is_cpu()) return c->comm->allreduce(c->group, c->member, id, t.data_ptr<float>(), static_cast<std::size_t>(t.numel()));
  // --cuda (one member per rank, trainer_io.cpp): the collectives sum host
  // buffers. The copy out waits for the current stream (the worker's, or in
  // a backward the stream of its forward), the copy back is queued on it.
  torch::Tensor h = t.to(torch::kCPU).contiguous();
  c->comm->allreduce(c->group, c->member, id, h.data_ptr<float>(), static_cast<std::size_t>(h.numel()));
  torch::NoGradGuard no_grad;
  t.copy_(h);
}

}  // namespace rrfp::train
