// Model and training configuration for `rrfp train`. Torch-free so that the
// driver and the tests can use it without paying for torch headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rrfp::train {

// A GPT-style byte-level decoder. Defaults train in about a minute on 2 cores.
struct GptConfig {
  int vocab = 256;     // bytes
  int d_model = 64;
  int heads = 4;
  int layers = 4;      // transformer blocks; the most model stages possible
  int seq_len = 64;    // tokens per sequence
  // Per block, the MLP's hidden width (0: an attention-only block); empty =
  // 4 * d_model everywhere. Unequal widths make blocks unequal work.
  std::vector<int> mlp_widths;
  int mlp_width(int block) const { return mlp_widths.empty() ? 4 * d_model : mlp_widths[block]; }
  bool uniform_mlp() const;  // every block has the default 4 * d_model
  // Throws SpecError naming the first bad size.
  void validate() const;
  bool operator==(const GptConfig& o) const {
    return vocab == o.vocab && d_model == o.d_model && heads == o.heads && layers == o.layers &&
           seq_len == o.seq_len && mlp_widths == o.mlp_widths;
  }
};

// gpt-small (rrfp train --model gpt-small, docs/gpu.md): gpt-tiny's code at
// a size that keeps one H200 busy for tens of milliseconds a step in fp32:
// d_model 512, 8 heads, 8 blocks, 256 positions, 8 microbatches of 8
// sequences (about 25 M parameters, 2.5 TFLOP a step).
GptConfig gpt_small_config();
inline constexpr int kGptSmallMicroBatchSize = 8;
inline constexpr int kGptSmallMicrobatches = 8;

// "W1,W2,...": one MLP width per block. Throws SpecError naming the flag.
std::vector<int> parse_int_list(const std::string& s, const char* flag);

// Blocks [first, last) of the model held by each model stage; the first stage
// also holds the embeddings, the last the final norm, the head and the loss.
struct StageRange {
  int first = 0;
  int last = 0;
};
// Contiguous, balanced (sizes differ by at most one, larger ones first).
// Throws SpecError when there are more stages than blocks.
std::vector<StageRange> partition_blocks(int layers, int stages);
// Any contiguous split, given as blocks per model stage (`--partition`, a
// plan's cuts). The first stage may hold the embedding alone and the last
// the head alone (0 blocks); every other stage needs a block. Throws
// SpecError when the counts do not cover `layers` blocks or leave a stage empty.
std::vector<StageRange> partition_from_counts(const std::vector<int>& blocks_per_stage, int layers);

}  // namespace rrfp::train
