// gpt-tiny: a pre-norm GPT-style byte decoder written with plain tensors and
// functional ops, so each parameter has one global name and one place in a
// fixed order whatever the partition into stages.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/config.hpp"

namespace rrfp::train {

struct NamedParam {
  std::string name;
  torch::Tensor t;
};

struct BlockParams {
  torch::Tensor ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b;
  torch::Tensor ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

// The whole model. Parameters are drawn from `seed` in the order of
// all_params(), so two models with the same config and seed are identical.
class GptModel {
 public:
  GptModel(const GptConfig& cfg, std::uint64_t seed);
  const GptConfig& config() const { return cfg_; }
  // Global order: embeddings, blocks 0..L-1, final norm, head.
  const std::vector<NamedParam>& all_params() const { return params_; }
  // Parameters of one model stage, in global order.
  std::vector<NamedParam> stage_params(const StageRange& r, bool first, bool last) const;

  // Pieces of the forward pass (inputs and outputs [b, T, d] unless noted).
  torch::Tensor embed(const torch::Tensor& tokens) const;  // tokens [b, T] int64
  torch::Tensor block(int i, const torch::Tensor& x) const;
  torch::Tensor head(const torch::Tensor& x) const;  // -> logits [b, T, vocab]
  // Mean cross-entropy of logits against targets [b, T] int64.
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets);

 private:
  GptConfig cfg_;
  torch::Tensor tok_emb_, pos_emb_, lnf_w_, lnf_b_, head_w_, head_b_;
  std::vector<BlockParams> blocks_;
  torch::Tensor causal_mask_;  // [T, T], true above the diagonal
  std::vector<NamedParam> params_;
  std::vector<std::size_t> block_param_begin_;  // index into params_ per block
};

// Forward of one model stage: the first embeds tokens, the last applies the
// head (the loss is taken by the caller, which knows the targets).
class StageModule {
 public:
  StageModule(const GptModel& m, StageRange r, bool first, bool last)
      : m_(&m), r_(r), first_(first), last_(last), params_(m.stage_params(r, first, last)) {}
  torch::Tensor forward(const torch::Tensor& input) const;
  bool first() const { return first_; }
  bool last() const { return last_; }
  const std::vector<NamedParam>& params() const { return params_; }

 private:
  const GptModel* m_;
  StageRange r_;
  bool first_, last_;
  std::vector<NamedParam> params_;
};

}  // namespace rrfp::train
