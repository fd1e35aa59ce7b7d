// AMDP with --deterministic (docs/async.md, "Reproducible AMDP"): a forward
// of a window's group k runs with its stage's weights of version k-1 (the
// version its gate waited for), even when the update of group k-1 has
// already landed. Only the update of group k-1 can have landed (the next
// one waits for group k's backwards, and so for its forwards), so one
// older copy per stage is enough: the weights just before the stage's
// latest update (or install, across ranks), or a gate's packed weights.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "train/pipeline.hpp"

namespace rrfp::train {

// Stage s's parameters' data, outside autograd: copying into them is an
// update, as the optimizer's, not an operation a backward has to replay.
std::vector<torch::Tensor> stage_weight_data(const Pipeline& pipe, int s);

class OlderWeights {
 public:
  explicit OlderWeights(int stages) : copies_(stages), versions_(stages, -1) {}
  // Before stage s moves on from `version`: keep a copy of its weights.
  void keep(const Pipeline& pipe, int s, int version);
  // Stage s's weights of `version`: the kept copy, or the packed weights
  // of `gate` (AmdpRanks::pack_weights, may be null) when they hold it.
  // Throws std::logic_error when neither does.
  std::vector<torch::Tensor> of(const Pipeline& pipe, int s, int version, const void* gate) const;

 private:
  std::vector<std::vector<torch::Tensor>> copies_;
  std::vector<int> versions_;
};

// Runs one pass with other weights: puts `older` into stage s's
// parameters, puts the current ones back when it goes out of scope (also
// when the pass throws). The caller holds the stage exclusively.
class WeightSwap {
 public:
  WeightSwap(Pipeline& pipe, int s, const std::vector<torch::Tensor>& older);
  ~WeightSwap();
  WeightSwap(const WeightSwap&) = delete;
  WeightSwap& operator=(const WeightSwap&) = delete;

 private:
  std::vector<torch::Tensor> params_, current_;
};

}  // namespace rrfp::train
