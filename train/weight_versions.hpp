// AMDP with --deterministic (docs/async.md, "Reproducible AMDP"): a forward
// of a window's group k runs with its stage's weights of version k-1 (the
// version its gate waited for), even when the update of group k-1 has
// already landed. Only the update of group k-1 can have landed (the next
// one waits for group k's backwards, and so for its forwards), so one
// older copy per stage is enough: the weights just before the stage's
// latest update (or install, across ranks), or a gate's packed weights.
#pragma once

#include <torch/torch.h>

#include <map>
#include <mutex>
#include <vector>

#include "train/pipeline.hpp"

namespace rrfp::train {

// Stage s's parameters' data, outside autograd: copying into them is an
// update, as the optimizer's, not an operation a backward has to replay.
std::vector<torch::Tensor> stage_weight_data(const Pipeline& pipe, int s);
// A copy of them.
std::vector<torch::Tensor> copy_stage_weights(const Pipeline& pipe, int s);

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

// PACI with --deterministic (docs/async.md, "Reproducible PACI"): each
// forward runs on the oldest version its window lets it start on (at
// slack 0 the one 1F1B's order gives it), whenever it runs.
// Its window (data flow) never lets a forward start before that version's
// update, but it may start after later ones: then it needs a copy of an
// older version. A copy is kept only while a forward pinned to it has
// not run. Thread-safe.
class PinnedVersions {
 public:
  // windows[s]: stage s's forward window W (DataPlanOptions::forward_window);
  // place[m]: microbatch m's index among its pipeline's (data-parallel
  // replicas: each its own window; one pipeline: m); group: a pipeline's
  // microbatches per update. Forward m runs on version
  // floor((place[m] - W + 1) / group): it waits for the backward W before
  // it in its pipeline, and so for the updates of the groups that end
  // before that one.
  PinnedVersions(const std::vector<int>& windows, int group, const std::vector<int>& place);
  int of_forward(int s, int m) const { return pinned_.at(s).at(m); }
  // Before stage s moves on from `version`: a copy, if a forward pinned to
  // it has not run yet.
  void before_update(const Pipeline& pipe, int s, int version);
  // The kept copy of stage s's `version`; throws std::logic_error if none.
  std::vector<torch::Tensor> copy_of(int s, int version) const;
  // Forward m of stage s ran: its version's copy goes once none waits for it.
  void ran(int s, int m);

 private:
  std::vector<std::vector<int>> pinned_;  // [s][m]: forward m's version
  std::vector<std::map<int, int>> waiting_;  // [s][version]: forwards pinned to it not yet run
  std::vector<std::map<int, std::vector<torch::Tensor>>> copies_;
  mutable std::mutex mu_;
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
