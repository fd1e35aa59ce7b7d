#include "train/weight_versions.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "train/amdp_ranks.hpp"

namespace rrfp::train {

std::vector<torch::Tensor> stage_weight_data(const Pipeline& pipe, int s) {
  std::vector<torch::Tensor> out;
  for (const auto& p : pipe.stage(s).params()) out.push_back(p.t.variable_data());
  return out;
}

void OlderWeights::keep(const Pipeline& pipe, int s, int version) {
  torch::NoGradGuard no_grad;
  auto& c = copies_.at(s);
  const auto now = stage_weight_data(pipe, s);
  if (c.empty())
    for (const auto& t : now) c.push_back(t.clone());
  else
    for (size_t i = 0; i < now.size(); ++i) c[i].copy_(now[i]);
  versions_[s] = version;
}

std::vector<torch::Tensor> OlderWeights::of(const Pipeline& pipe, int s, int version, const void* gate) const {
  if (versions_.at(s) == version) return copies_[s];
  if (gate && AmdpRanks::packed_version(gate) == version) return AmdpRanks::packed_weights(pipe, s, gate);
  throw std::logic_error(fmt::format("stage {} holds no copy of its weights of version {} (kept: {}, gate: {})", s,
                                     version, versions_[s], gate ? AmdpRanks::packed_version(gate) : -1));
}

WeightSwap::WeightSwap(Pipeline& pipe, int s, const std::vector<torch::Tensor>& older) : params_(stage_weight_data(pipe, s)) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    current_.push_back(params_[i].clone());
    params_[i].copy_(older.at(i));
  }
}

WeightSwap::~WeightSwap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(current_[i]);
}

}  // namespace rrfp::train
