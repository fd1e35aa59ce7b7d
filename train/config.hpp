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
  // Throws SpecError naming the first bad size.
  void validate() const;
  bool operator==(const GptConfig& o) const {
    return vocab == o.vocab && d_model == o.d_model && heads == o.heads && layers == o.layers &&
           seq_len == o.seq_len;
  }
};

// Blocks [first, last) of the model held by each model stage; the first stage
// also holds the embeddings, the last the final norm, the head and the loss.
struct StageRange {
  int first = 0;
  int last = 0;
};
// Contiguous, balanced (sizes differ by at most one, larger ones first).
// Throws SpecError when there are more stages than blocks.
std::vector<StageRange> partition_blocks(int layers, int stages);

}  // namespace rrfp::train
