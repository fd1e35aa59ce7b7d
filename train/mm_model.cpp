#include "train/mm_model.hpp"
#include "train/linear_tape.hpp"
#include "train/tp_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "graph/pipeline_spec.hpp"

namespace rrfp::train {

MmModel::MmModel(const GptConfig& gpt, int enc_layers, std::uint64_t seed) : cfg_(gpt), enc_layers_(enc_layers) {
  cfg_.validate();
  if (enc_layers < 1 || enc_layers > 64) throw SpecError(fmt::format("--enc-layers {} out of range", enc_layers));
  // The parameters in their global order (bind() reads the fields off
  // it), drawn from one generator in that order.
  ParamFactory f(seed);
  const int64_t d = cfg_.d_model, V = cfg_.vocab;
  params_.push_back({"vis.patch.w", f.normal({d, kPatchDim}, 0.1)});
  params_.push_back({"vis.patch.b", f.zeros(d)});
  params_.push_back({"vis.pos", f.normal({kMaxPatches, d}, 0.01)});
  for (int i = 0; i < enc_layers; ++i) f.block(d, enc_layers, fmt::format("vis.block{}.", i), params_);
  params_.push_back({"vis.pool_q", f.normal({kPrefix, d}, 0.02)});
  params_.push_back({"vis.proj.w", f.normal({d, d}, 0.02)});
  params_.push_back({"vis.proj.b", f.zeros(d)});
  params_.push_back({"tok_emb", f.normal({V, d}, 0.02)});
  params_.push_back({"pos_emb", f.normal({kPrefix + kCaption, d}, 0.01)});
  for (int i = 0; i < cfg_.layers; ++i) f.block(d, cfg_.layers, fmt::format("block{}.", i), params_);
  f.head(d, V, params_);
  bind();
  const int64_t L = kPrefix + kCaption;
  causal_mask_ = torch::ones({L, L}, torch::kBool).triu(1);
}

MmModel::MmModel(const MmModel& full, int members, int member)
    : cfg_(full.cfg_), enc_layers_(full.enc_layers_), members_(members) {
  if (members < 1 || member < 0 || member >= members) throw std::invalid_argument("MmModel: bad tensor-parallel member");
  if (full.members_ != 1) throw std::invalid_argument("MmModel: a shard of a shard");
  // Every block of mm-tiny (encoder and language) has cfg_.heads heads and
  // an MLP of 4 d_model.
  if (cfg_.heads % members != 0 || cfg_.d_model % members != 0)
    throw SpecError(fmt::format("--tensor-parallel {} must divide the heads ({}) and the width ({})", members,
                                cfg_.heads, cfg_.d_model));
  for (const NamedParam& p : full.params_)
    params_.push_back({p.name, shard_of(p.t, shard_spec(p.name), member, members).requires_grad_(true)});
  bind();
  // On the shards' device (the full model's: a GPU with --cuda).
  causal_mask_ = full.causal_mask_.clone();
}

void MmModel::bind() {
  auto at_name = [&](std::size_t at, const char* name) {
    if (at >= params_.size() || params_[at].name != name)
      throw std::logic_error(fmt::format("MmModel: parameter {} is not '{}'", at, name));
    return params_[at].t;
  };
  patch_w_ = at_name(0, "vis.patch.w"), patch_b_ = at_name(1, "vis.patch.b"), patch_pos_ = at_name(2, "vis.pos");
  std::size_t at = 3;
  enc_.clear();
  for (int i = 0; i < enc_layers_; ++i) enc_.push_back(block_at(params_, at, true));
  pool_q_ = at_name(at, "vis.pool_q"), proj_w_ = at_name(at + 1, "vis.proj.w"), proj_b_ = at_name(at + 2, "vis.proj.b");
  tok_emb_ = at_name(at + 3, "tok_emb"), pos_emb_ = at_name(at + 4, "pos_emb");
  at += 5;
  vision_end_ = at;
  lang_.clear();
  lang_param_begin_.clear();
  for (int i = 0; i < cfg_.layers; ++i) {
    lang_param_begin_.push_back(at);
    lang_.push_back(block_at(params_, at, true));
  }
  lang_param_begin_.push_back(at);
  head_ = {at_name(at, "lnf.w"), at_name(at + 1, "lnf.b"), at_name(at + 2, "head.w"), at_name(at + 3, "head.b")};
  if (at + 4 != params_.size()) throw std::logic_error("MmModel: unexpected parameter layout");
}

torch::Tensor MmModel::block(const BlockParams& b, const torch::Tensor& x, const torch::Tensor& masked) const {
  if (members_ == 1) return transformer_block(b, x, cfg_.heads, masked);
  return tp_block(b, x, cfg_.heads / members_, cfg_.d_model / cfg_.heads, masked);
}

std::vector<StageRange> MmModel::partition(int stages) const {
  if (stages == 1) return {{0, cfg_.layers}};
  if (stages < 1) throw SpecError("need at least one stage");
  if (stages - 1 > cfg_.layers)
    throw SpecError(fmt::format("{} model stages but mm-tiny has only {} language blocks after its vision stage "
                                "(use more --layers or fewer stages)",
                                stages, cfg_.layers));
  std::vector<StageRange> r = {{0, 0}};
  for (const StageRange& x : partition_blocks(cfg_.layers, stages - 1)) r.push_back(x);
  return r;
}

std::vector<NamedParam> MmModel::stage_params(const StageRange& r, bool first, bool last) const {
  std::vector<NamedParam> out;
  if (first) out.insert(out.end(), params_.begin(), params_.begin() + vision_end_);
  out.insert(out.end(), params_.begin() + lang_param_begin_[r.first], params_.begin() + lang_param_begin_[r.last]);
  if (last) out.insert(out.end(), params_.end() - 4, params_.end());
  return out;
}

torch::Tensor MmModel::encode(const Microbatch& mb) const {
  const int64_t N = mb.patches.size(1), d = cfg_.d_model;
  torch::Tensor x = tape_linear(mb.patches, patch_w_, patch_b_) + patch_pos_.slice(0, 0, N);
  const torch::Tensor pad = mb.patch_mask.logical_not();  // [b, N]
  const torch::Tensor key_pad = pad.unsqueeze(1).unsqueeze(1);  // [b, 1, 1, N]
  for (const BlockParams& b : enc_) x = block(b, x, key_pad);
  // Attention pooling over the real patches into kPrefix tokens.
  auto scores = torch::matmul(pool_q_, x.transpose(1, 2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  scores = scores.masked_fill(pad.unsqueeze(1), -std::numeric_limits<float>::infinity());
  auto prefix = tape_linear(torch::matmul(torch::softmax(scores, -1), x), proj_w_, proj_b_);
  auto text = torch::embedding(tok_emb_, mb.tokens);
  return torch::cat({prefix, text}, 1) + pos_emb_;
}

torch::Tensor MmModel::stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                                     const Microbatch& mb) const {
  torch::Tensor x = first ? encode(mb) : input;
  for (int i = r.first; i < r.last; ++i) x = block(lang_[i], x, causal_mask_);
  if (!last) return x;
  return head_.forward(x.slice(1, kPrefix, kPrefix + kCaption));
}

std::vector<Microbatch> make_image_microbatches(const std::vector<ImageSample>& samples, int M, int b) {
  if (static_cast<int>(samples.size()) != M * b)
    throw std::invalid_argument("make_image_microbatches: sample count does not match M * b");
  std::vector<Microbatch> out;
  for (int m = 0; m < M; ++m) {
    int64_t N = 0;
    for (int i = 0; i < b; ++i) N = std::max<int64_t>(N, int64_t{samples[m * b + i].side} * samples[m * b + i].side);
    Microbatch mb;
    mb.tokens = torch::zeros({b, kCaption}, torch::kInt64);
    mb.targets = torch::full({b, kCaption}, -1, torch::kInt64);
    mb.patches = torch::zeros({b, N, kPatchDim}, torch::kFloat32);
    mb.patch_mask = torch::zeros({b, N}, torch::kBool);
    auto tok = mb.tokens.accessor<int64_t, 2>();
    auto tgt = mb.targets.accessor<int64_t, 2>();
    for (int i = 0; i < b; ++i) {
      const ImageSample& s = samples[m * b + i];
      const int64_t n = int64_t{s.side} * s.side;
      std::memcpy(mb.patches[i].data_ptr<float>(), s.patches.data(), s.patches.size() * sizeof(float));
      mb.patch_mask[i].slice(0, 0, n).fill_(true);
      tok[i][0] = 2;  // start of caption
      for (int t = 0; t < kCaption && t < static_cast<int>(s.caption.size()); ++t) {
        tgt[i][t] = static_cast<unsigned char>(s.caption[t]);
        if (t + 1 < kCaption) tok[i][t + 1] = tgt[i][t];
      }
    }
    out.push_back(std::move(mb));
  }
  return out;
}

}  // namespace rrfp::train
