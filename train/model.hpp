// Models for pipeline training, written with plain tensors and functional
// ops, so each parameter has one global name and one place in a fixed order
// whatever the partition into stages.
//   gpt-tiny: a pre-norm GPT-style byte decoder.
//   mm-tiny:  a vision encoder over a variable number of image patches, a
//             projector, and GPT language blocks (mm_model.hpp).
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

// One microbatch. gpt-tiny uses tokens and targets; mm-tiny adds images.
struct Microbatch {
  torch::Tensor tokens;      // [b, T] int64
  torch::Tensor targets;     // [b, T] int64; -1 = no loss at this position
  torch::Tensor patches;     // mm-tiny: [b, N, patch_dim] float, zero padded
  torch::Tensor patch_mask;  // mm-tiny: [b, N] bool, true = real patch
};

// What the pipeline needs from a model: a partition into stages, the
// forward of one stage and the loss.
class Model {
 public:
  virtual ~Model() = default;
  // Global order; two models of one config and seed are identical.
  virtual const std::vector<NamedParam>& all_params() const = 0;
  // Throws SpecError when the model cannot be split into `stages`.
  virtual std::vector<StageRange> partition(int stages) const = 0;
  // Blocks a partition splits (gpt-tiny: its blocks; mm-tiny: its language
  // blocks, after the vision encoder that always opens stage 0).
  virtual int blocks() const = 0;
  // Transformer blocks a stage runs (mm-tiny's first stage: its encoder's too).
  virtual int blocks_in(const StageRange& r, bool /*first*/) const { return r.last - r.first; }
  // `counts` blocks per stage (partition_from_counts); empty = partition(stages).
  std::vector<StageRange> partition(int stages, const std::vector<int>& counts) const;
  // Parameters of one stage, in global order.
  virtual std::vector<NamedParam> stage_params(const StageRange& r, bool first, bool last) const = 0;
  // First stage: input ignored, reads mb. Last stage: returns logits.
  virtual torch::Tensor stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                                      const Microbatch& mb) const = 0;
  // Mean cross-entropy over positions with a target >= 0.
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets);
  // Moves every parameter to `device` in place (the same tensors, so the
  // stages and optimizers holding them follow) and the model's own buffers
  // (masks) with them: rrfp train --cuda (docs/gpu.md).
  void to(const torch::Device& device);
  torch::Device device() const { return all_params().front().t.device(); }

 protected:
  virtual void buffers_to(const torch::Device& device) = 0;
};

struct BlockParams {
  torch::Tensor ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b;
  torch::Tensor ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
};

// Final layer norm and LM head: logits = linear(layer_norm(x)).
struct HeadParams {
  torch::Tensor lnf_w, lnf_b, head_w, head_b;
  torch::Tensor forward(const torch::Tensor& x) const;
};

// Builds parameters in a fixed order from one generator.
class ParamFactory {
 public:
  explicit ParamFactory(std::uint64_t seed);
  torch::Tensor normal(std::vector<int64_t> shape, double stdv);
  static torch::Tensor zeros(int64_t n);
  static torch::Tensor ones(int64_t n);
  // A pre-norm block of width d with an MLP of hidden width `mlp` (default
  // 4d; 0: attention only, no MLP parameters), its params appended to `out`.
  BlockParams block(int64_t d, int layers_for_scaling, const std::string& prefix, std::vector<NamedParam>& out,
                    int64_t mlp = -1);
  // Final norm and a d -> vocab head ("lnf.w", "lnf.b", "head.w", "head.b"), appended to `out`.
  HeadParams head(int64_t d, int64_t vocab, std::vector<NamedParam>& out);

 private:
  at::Generator gen_;
};

// The block whose parameters start at ps[at], in ParamFactory::block's
// order (12 with an MLP, 6 without); `at` moves past them. A copy of a
// model (tensor-parallel shards) binds its tensors with it.
BlockParams block_at(const std::vector<NamedParam>& ps, std::size_t& at, bool mlp);

// Multi-head attention of h [b, T, d_in] with `heads` heads of width dh
// (q, k, v rows stacked in qkv_w); -> [b, T, heads * dh].
torch::Tensor self_attention(const torch::Tensor& h, const torch::Tensor& qkv_w, const torch::Tensor& qkv_b,
                             int64_t heads, int64_t dh, const torch::Tensor& masked);

// Pre-norm transformer block (attention only when it has no MLP); `masked` (broadcast to [b, H, T, T]) marks the
// attention scores to drop (causal and/or padding).
torch::Tensor transformer_block(const BlockParams& b, const torch::Tensor& x, int64_t heads,
                                const torch::Tensor& masked);

// gpt-tiny. Stage ranges index its blocks.
class GptModel : public Model {
 public:
  GptModel(const GptConfig& cfg, std::uint64_t seed);
  const GptConfig& config() const { return cfg_; }
  const std::vector<NamedParam>& all_params() const override { return params_; }
  std::vector<StageRange> partition(int stages) const override { return partition_blocks(cfg_.layers, stages); }
  using Model::partition;
  int blocks() const override { return cfg_.layers; }
  std::vector<NamedParam> stage_params(const StageRange& r, bool first, bool last) const override;
  torch::Tensor stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                              const Microbatch& mb) const override;

  torch::Tensor embed(const torch::Tensor& tokens) const;  // tokens [b, T] int64
  torch::Tensor block(int i, const torch::Tensor& x) const;
  torch::Tensor head(const torch::Tensor& x) const;  // -> logits [b, T, vocab]

 protected:
  void buffers_to(const torch::Device& device) override { causal_mask_ = causal_mask_.to(device); }

 private:
  GptConfig cfg_;
  torch::Tensor tok_emb_, pos_emb_;
  HeadParams head_;
  std::vector<BlockParams> blocks_;
  torch::Tensor causal_mask_;  // [T, T], true above the diagonal
  std::vector<NamedParam> params_;
  std::vector<std::size_t> block_param_begin_;  // index into params_ per block
};

// Token plus learned position embeddings of tokens [b, T] (int64).
torch::Tensor gpt_embed(const torch::Tensor& tok_emb, const torch::Tensor& pos_emb, const torch::Tensor& tokens);

// Messages between GPT stages hold --seq-len positions; a microbatch of
// shorter sequences (--seq-len-dist) computes on its own length only: a
// stage takes the first stage's embedding or its input cut to that length,
// and zero-pads what it sends (the gradient there is zero).
torch::Tensor gpt_stage_input(const torch::Tensor& tok_emb, const torch::Tensor& pos_emb, bool first,
                              const torch::Tensor& input, const Microbatch& mb);
torch::Tensor gpt_stage_output(const torch::Tensor& x, int64_t seq_len);

// A GPT-style stage's parameters: the embeddings (the first two) on the
// first stage, blocks [r.first, r.last) (block i starts at block_begin[i]),
// and the final norm and head (the last four) on the last stage.
std::vector<NamedParam> gpt_stage_params(const std::vector<NamedParam>& all, const std::vector<std::size_t>& block_begin,
                                         const StageRange& r, bool first, bool last);

// Forward of one model stage of any model.
class StageModule {
 public:
  StageModule(const Model& m, StageRange r, bool first, bool last)
      : m_(&m), r_(r), first_(first), last_(last), params_(m.stage_params(r, first, last)) {}
  torch::Tensor forward(const torch::Tensor& input, const Microbatch& mb) const {
    return m_->stage_forward(r_, first_, last_, input, mb);
  }
  bool first() const { return first_; }
  bool last() const { return last_; }
  const std::vector<NamedParam>& params() const { return params_; }

 private:
  const Model* m_;
  StageRange r_;
  bool first_, last_;
  std::vector<NamedParam> params_;
};

}  // namespace rrfp::train
