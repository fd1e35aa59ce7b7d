#include "train/model.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace rrfp::train {

namespace {

torch::Tensor leaf(torch::Tensor t) { return t.requires_grad_(true); }

}  // namespace

GptModel::GptModel(const GptConfig& cfg, std::uint64_t seed) : cfg_(cfg) {
  cfg_.validate();
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t d = cfg.d_model, V = cfg.vocab, T = cfg.seq_len, F = 4 * d;
  const auto opt = torch::TensorOptions().dtype(torch::kFloat32);
  auto normal = [&](std::vector<int64_t> shape, double stdv) {
    auto t = torch::empty(shape, opt);
    t.normal_(0.0, stdv, gen);
    return leaf(t);
  };
  auto zeros = [&](int64_t n) { return leaf(torch::zeros({n}, opt)); };
  auto ones = [&](int64_t n) { return leaf(torch::ones({n}, opt)); };
  // GPT-2 style: residual projections scaled down with depth.
  const double proj_std = 0.02 / std::sqrt(2.0 * cfg.layers);

  tok_emb_ = normal({V, d}, 0.02);
  pos_emb_ = normal({T, d}, 0.01);
  params_.push_back({"tok_emb", tok_emb_});
  params_.push_back({"pos_emb", pos_emb_});
  for (int i = 0; i < cfg.layers; ++i) {
    BlockParams b;
    b.ln1_w = ones(d), b.ln1_b = zeros(d);
    b.qkv_w = normal({3 * d, d}, 0.02), b.qkv_b = zeros(3 * d);
    b.proj_w = normal({d, d}, proj_std), b.proj_b = zeros(d);
    b.ln2_w = ones(d), b.ln2_b = zeros(d);
    b.fc1_w = normal({F, d}, 0.02), b.fc1_b = zeros(F);
    b.fc2_w = normal({d, F}, proj_std), b.fc2_b = zeros(d);
    block_param_begin_.push_back(params_.size());
    const std::string p = "block" + std::to_string(i) + ".";
    for (auto& [n, t] : std::vector<std::pair<const char*, torch::Tensor*>>{
             {"ln1.w", &b.ln1_w}, {"ln1.b", &b.ln1_b}, {"qkv.w", &b.qkv_w}, {"qkv.b", &b.qkv_b},
             {"proj.w", &b.proj_w}, {"proj.b", &b.proj_b}, {"ln2.w", &b.ln2_w}, {"ln2.b", &b.ln2_b},
             {"fc1.w", &b.fc1_w}, {"fc1.b", &b.fc1_b}, {"fc2.w", &b.fc2_w}, {"fc2.b", &b.fc2_b}})
      params_.push_back({p + n, *t});
    blocks_.push_back(b);
  }
  block_param_begin_.push_back(params_.size());
  lnf_w_ = ones(d), lnf_b_ = zeros(d);
  head_w_ = normal({V, d}, 0.02), head_b_ = zeros(V);
  params_.push_back({"lnf.w", lnf_w_});
  params_.push_back({"lnf.b", lnf_b_});
  params_.push_back({"head.w", head_w_});
  params_.push_back({"head.b", head_b_});
  causal_mask_ = torch::ones({T, T}, torch::kBool).triu(1);
}

std::vector<NamedParam> GptModel::stage_params(const StageRange& r, bool first, bool last) const {
  std::vector<NamedParam> out;
  if (first) out.insert(out.end(), params_.begin(), params_.begin() + 2);
  out.insert(out.end(), params_.begin() + block_param_begin_[r.first], params_.begin() + block_param_begin_[r.last]);
  if (last) out.insert(out.end(), params_.end() - 4, params_.end());
  return out;
}

torch::Tensor GptModel::embed(const torch::Tensor& tokens) const {
  const int64_t T = tokens.size(1);
  return torch::embedding(tok_emb_, tokens) + pos_emb_.slice(0, 0, T);
}

torch::Tensor GptModel::block(int i, const torch::Tensor& x) const {
  const BlockParams& b = blocks_[i];
  const int64_t B = x.size(0), T = x.size(1), d = cfg_.d_model, H = cfg_.heads, dh = d / H;
  auto h = torch::layer_norm(x, {d}, b.ln1_w, b.ln1_b);
  auto qkv = torch::linear(h, b.qkv_w, b.qkv_b).view({B, T, 3, H, dh}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1], v = qkv[2];
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(dh)));
  att = att.masked_fill(causal_mask_.slice(0, 0, T).slice(1, 0, T), -std::numeric_limits<float>::infinity());
  att = torch::softmax(att, -1);
  auto y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, d});
  auto x1 = x + torch::linear(y, b.proj_w, b.proj_b);
  auto h2 = torch::layer_norm(x1, {d}, b.ln2_w, b.ln2_b);
  return x1 + torch::linear(torch::gelu(torch::linear(h2, b.fc1_w, b.fc1_b)), b.fc2_w, b.fc2_b);
}

torch::Tensor GptModel::head(const torch::Tensor& x) const {
  auto h = torch::layer_norm(x, {cfg_.d_model}, lnf_w_, lnf_b_);
  return torch::linear(h, head_w_, head_b_);
}

torch::Tensor GptModel::loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

torch::Tensor StageModule::forward(const torch::Tensor& input) const {
  torch::Tensor x = first_ ? m_->embed(input) : input;
  for (int i = r_.first; i < r_.last; ++i) x = m_->block(i, x);
  return last_ ? m_->head(x) : x;
}

}  // namespace rrfp::train
