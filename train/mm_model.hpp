// mm-tiny: a toy vision-language model. The first pipeline stage is the
// vision encoder (patch embedding, bidirectional blocks over the real
// patches of each image, attention pooling into kPrefix tokens, a projector)
// plus the caption's token embeddings; the language stages are GPT blocks
// over [prefix | caption]; the last stage predicts the caption bytes.
#pragma once

#include "train/mm_data.hpp"
#include "train/model.hpp"

namespace rrfp::train {

inline constexpr int kPrefix = 4;   // image tokens fed to the language model
inline constexpr int kCaption = 16; // caption positions (bytes), padded

class MmModel : public Model {
 public:
  // gpt.layers language blocks, enc_layers encoder blocks, width gpt.d_model.
  MmModel(const GptConfig& gpt, int enc_layers, std::uint64_t seed);
  // Member `member` of a Megatron-style split of `full` over `members`
  // (train/tp_model.hpp): the heads and MLP columns of every encoder and
  // language block sharded, everything else (patch embedding, pooling,
  // projector, embeddings, head) copied. Copies: later changes to `full`
  // are not seen.
  MmModel(const MmModel& full, int members, int member);
  const std::vector<NamedParam>& all_params() const override { return params_; }
  // One stage: everything. More: stage 0 is the vision encoder alone, the
  // language blocks are split over the others.
  std::vector<StageRange> partition(int stages) const override;
  using Model::partition;
  int blocks() const override { return cfg_.layers; }
  int blocks_in(const StageRange& r, bool first) const override { return r.last - r.first + (first ? enc_layers_ : 0); }
  std::vector<NamedParam> stage_params(const StageRange& r, bool first, bool last) const override;
  torch::Tensor stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                              const Microbatch& mb) const override;

 protected:
  void buffers_to(const torch::Device& device) override { causal_mask_ = causal_mask_.to(device); }

 private:
  torch::Tensor encode(const Microbatch& mb) const;  // -> [b, kPrefix + kCaption, d]
  void bind();  // the fields below from params_, in the order the first constructor builds it
  torch::Tensor block(const BlockParams& b, const torch::Tensor& x, const torch::Tensor& masked) const;
  GptConfig cfg_;
  int enc_layers_;
  int members_ = 1;  // tensor-parallel members: this one holds 1/members_ of each block's heads
  torch::Tensor patch_w_, patch_b_, patch_pos_, pool_q_, proj_w_, proj_b_, tok_emb_, pos_emb_;
  HeadParams head_;
  std::vector<BlockParams> enc_, lang_;
  torch::Tensor causal_mask_;
  std::vector<NamedParam> params_;
  std::size_t vision_end_ = 0;                  // params_[0, vision_end_): stage 0
  std::vector<std::size_t> lang_param_begin_;  // per language block, and the end
};

// Microbatches of images and captions: tokens are "\x02" + caption (shifted),
// targets the caption bytes, -1 on padding.
std::vector<Microbatch> make_image_microbatches(const std::vector<ImageSample>& samples, int microbatches,
                                                int micro_batch_size);

}  // namespace rrfp::train
