#include "train/model.hpp"
#include "train/linear_tape.hpp"

#include "graph/pipeline_spec.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace rrfp::train {

ParamFactory::ParamFactory(std::uint64_t seed) : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

torch::Tensor ParamFactory::normal(std::vector<int64_t> shape, double stdv) {
  torch::NoGradGuard no_grad;
  auto t = torch::empty(shape, torch::kFloat32);
  t.normal_(0.0, stdv, gen_);
  return t.requires_grad_(true);
}
torch::Tensor ParamFactory::zeros(int64_t n) { return torch::zeros({n}, torch::kFloat32).requires_grad_(true); }
torch::Tensor ParamFactory::ones(int64_t n) { return torch::ones({n}, torch::kFloat32).requires_grad_(true); }

BlockParams ParamFactory::block(int64_t d, int layers_for_scaling, const std::string& prefix,
                                std::vector<NamedParam>& out, int64_t mlp) {
  if (mlp < 0) mlp = 4 * d;
  // GPT-2 style: residual projections scaled down with depth.
  const double proj_std = 0.02 / std::sqrt(2.0 * layers_for_scaling);
  BlockParams b;
  b.ln1_w = ones(d), b.ln1_b = zeros(d);
  b.qkv_w = normal({3 * d, d}, 0.02), b.qkv_b = zeros(3 * d);
  b.proj_w = normal({d, d}, proj_std), b.proj_b = zeros(d);
  std::vector<std::pair<const char*, torch::Tensor*>> named = {
      {"ln1.w", &b.ln1_w}, {"ln1.b", &b.ln1_b}, {"qkv.w", &b.qkv_w}, {"qkv.b", &b.qkv_b},
      {"proj.w", &b.proj_w}, {"proj.b", &b.proj_b}};
  if (mlp > 0) {
    b.ln2_w = ones(d), b.ln2_b = zeros(d);
    b.fc1_w = normal({mlp, d}, 0.02), b.fc1_b = zeros(mlp);
    b.fc2_w = normal({d, mlp}, proj_std), b.fc2_b = zeros(d);
    named.insert(named.end(), {{"ln2.w", &b.ln2_w}, {"ln2.b", &b.ln2_b}, {"fc1.w", &b.fc1_w},
                               {"fc1.b", &b.fc1_b}, {"fc2.w", &b.fc2_w}, {"fc2.b", &b.fc2_b}});
  }
  for (auto& [n, t] : named) out.push_back({prefix + n, *t});
  return b;
}

BlockParams block_at(const std::vector<NamedParam>& ps, std::size_t& at, bool mlp) {
  static const char* const kNames[] = {"ln1.w", "ln1.b", "qkv.w", "qkv.b", "proj.w", "proj.b",
                                       "ln2.w", "ln2.b", "fc1.w", "fc1.b", "fc2.w", "fc2.b"};
  if (at + (mlp ? 12 : 6) > ps.size()) throw std::logic_error("block_at: fewer parameters than a block has");
  auto p = [&](int k) {  // by position, checked by name: six of them share one shape
    const std::string& n = ps[at + k].name;
    const std::string want = kNames[k];
    if (n.size() < want.size() || n.compare(n.size() - want.size(), want.size(), want) != 0)
      throw std::logic_error(fmt::format("block_at: parameter {} is '{}', not a block's {}", at + k, n, want));
    return ps[at + k].t;
  };
  BlockParams b;
  b.ln1_w = p(0), b.ln1_b = p(1), b.qkv_w = p(2), b.qkv_b = p(3), b.proj_w = p(4), b.proj_b = p(5);
  if (mlp) b.ln2_w = p(6), b.ln2_b = p(7), b.fc1_w = p(8), b.fc1_b = p(9), b.fc2_w = p(10), b.fc2_b = p(11);
  at += mlp ? 12 : 6;
  return b;
}

torch::Tensor self_attention(const torch::Tensor& h, const torch::Tensor& qkv_w, const torch::Tensor& qkv_b,
                             int64_t heads, int64_t dh, const torch::Tensor& masked) {
  const int64_t B = h.size(0), T = h.size(1);
  auto qkv = tape_linear(h, qkv_w, qkv_b).view({B, T, 3, heads, dh}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(dh)));
  att = att.masked_fill(masked, -std::numeric_limits<float>::infinity());
  att = torch::softmax(att, -1);
  return torch::matmul(att, v).transpose(1, 2).reshape({B, T, heads * dh});
}

HeadParams ParamFactory::head(int64_t d, int64_t vocab, std::vector<NamedParam>& out) {
  HeadParams h{ones(d), zeros(d), normal({vocab, d}, 0.02), zeros(vocab)};
  out.push_back({"lnf.w", h.lnf_w});
  out.push_back({"lnf.b", h.lnf_b});
  out.push_back({"head.w", h.head_w});
  out.push_back({"head.b", h.head_b});
  return h;
}

torch::Tensor HeadParams::forward(const torch::Tensor& x) const {
  return tape_linear(torch::layer_norm(x, {x.size(-1)}, lnf_w, lnf_b), head_w, head_b);
}

std::vector<NamedParam> gpt_stage_params(const std::vector<NamedParam>& all, const std::vector<std::size_t>& block_begin,
                                         const StageRange& r, bool first, bool last) {
  std::vector<NamedParam> out;
  if (first) out.insert(out.end(), all.begin(), all.begin() + 2);
  out.insert(out.end(), all.begin() + block_begin[r.first], all.begin() + block_begin[r.last]);
  if (last) out.insert(out.end(), all.end() - 4, all.end());
  return out;
}

torch::Tensor transformer_block(const BlockParams& b, const torch::Tensor& x, int64_t H,
                                const torch::Tensor& masked) {
  const int64_t d = x.size(2);
  auto h = torch::layer_norm(x, {d}, b.ln1_w, b.ln1_b);
  auto y = self_attention(h, b.qkv_w, b.qkv_b, H, d / H, masked);
  auto x1 = x + tape_linear(y, b.proj_w, b.proj_b);
  if (!b.fc1_w.defined()) return x1;  // attention-only block
  auto h2 = torch::layer_norm(x1, {d}, b.ln2_w, b.ln2_b);
  return x1 + tape_linear(torch::gelu(tape_linear(h2, b.fc1_w, b.fc1_b)), b.fc2_w, b.fc2_b);
}

std::vector<StageRange> Model::partition(int stages, const std::vector<int>& counts) const {
  if (counts.empty()) return partition(stages);
  if (static_cast<int>(counts.size()) != stages)
    throw SpecError(fmt::format("partition has {} stages, the schedule {}", counts.size(), stages));
  return partition_from_counts(counts, blocks());
}

torch::Tensor Model::loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
}

void Model::to(const torch::Device& device) {
  torch::NoGradGuard g;
  for (const NamedParam& p : all_params()) p.t.set_data(p.t.to(device));
  buffers_to(device);
}

GptModel::GptModel(const GptConfig& cfg, std::uint64_t seed) : cfg_(cfg) {
  cfg_.validate();
  ParamFactory f(seed);
  const int64_t d = cfg.d_model, V = cfg.vocab, T = cfg.seq_len;
  tok_emb_ = f.normal({V, d}, 0.02);
  pos_emb_ = f.normal({T, d}, 0.01);
  params_.push_back({"tok_emb", tok_emb_});
  params_.push_back({"pos_emb", pos_emb_});
  for (int i = 0; i < cfg.layers; ++i) {
    block_param_begin_.push_back(params_.size());
    blocks_.push_back(f.block(d, cfg.layers, "block" + std::to_string(i) + ".", params_, cfg.mlp_width(i)));
  }
  block_param_begin_.push_back(params_.size());
  head_ = f.head(d, V, params_);
  causal_mask_ = torch::ones({T, T}, torch::kBool).triu(1);
}

std::vector<NamedParam> GptModel::stage_params(const StageRange& r, bool first, bool last) const {
  return gpt_stage_params(params_, block_param_begin_, r, first, last);
}

torch::Tensor gpt_embed(const torch::Tensor& tok_emb, const torch::Tensor& pos_emb, const torch::Tensor& tokens) {
  return torch::embedding(tok_emb, tokens) + pos_emb.slice(0, 0, tokens.size(1));
}

torch::Tensor gpt_stage_input(const torch::Tensor& tok_emb, const torch::Tensor& pos_emb, bool first,
                              const torch::Tensor& input, const Microbatch& mb) {
  if (first) return gpt_embed(tok_emb, pos_emb, mb.tokens);
  const int64_t len = mb.tokens.size(1);
  return input.size(1) > len ? input.slice(1, 0, len) : input;
}

torch::Tensor gpt_stage_output(const torch::Tensor& x, int64_t seq_len) {
  return x.size(1) < seq_len ? torch::constant_pad_nd(x, {0, 0, 0, seq_len - x.size(1)}) : x;
}

torch::Tensor GptModel::embed(const torch::Tensor& tokens) const { return gpt_embed(tok_emb_, pos_emb_, tokens); }

torch::Tensor GptModel::block(int i, const torch::Tensor& x) const {
  const int64_t T = x.size(1);
  return transformer_block(blocks_[i], x, cfg_.heads, causal_mask_.slice(0, 0, T).slice(1, 0, T));
}

torch::Tensor GptModel::head(const torch::Tensor& x) const {
  return head_.forward(x);
}

torch::Tensor GptModel::stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                                      const Microbatch& mb) const {
  torch::Tensor x = gpt_stage_input(tok_emb_, pos_emb_, first, input, mb);  // at the microbatch's length
  for (int i = r.first; i < r.last; ++i) x = block(i, x);
  return last ? head(x) : gpt_stage_output(x, cfg_.seq_len);
}

}  // namespace rrfp::train
