#include "train/weight_versions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "train/amdp_ranks.hpp"

namespace rrfp::train {

std::vector<torch::Tensor> stage_weight_data(const Pipeline& pipe, int s) {
  std::vector<torch::Tensor> out;
  for (const auto& p : pipe.stage(s).params()) out.push_back(p.t.variable_data());
  return out;
}

std::vector<torch::Tensor> copy_stage_weights(const Pipeline& pipe, int s) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> out;
  for (const auto& t : stage_weight_data(pipe, s)) out.push_back(t.clone());
  return out;
}

void OlderWeights::keep(const Pipeline& pipe, int s, int version) {
  torch::NoGradGuard no_grad;
  auto& c = copies_.at(s);
  if (c.empty()) {
    c = copy_stage_weights(pipe, s);
  } else {
    const auto now = stage_weight_data(pipe, s);
    for (size_t i = 0; i < now.size(); ++i) c[i].copy_(now[i]);
  }
  versions_[s] = version;
}

std::vector<torch::Tensor> OlderWeights::of(const Pipeline& pipe, int s, int version, const void* gate) const {
  if (versions_.at(s) == version) return copies_[s];
  if (gate && AmdpRanks::packed_version(gate) == version) return AmdpRanks::packed_weights(pipe, s, gate);
  throw std::logic_error(fmt::format("stage {} holds no copy of its weights of version {} (kept: {}, gate: {})", s,
                                     version, versions_[s], gate ? AmdpRanks::packed_version(gate) : -1));
}

PinnedVersions::PinnedVersions(const std::vector<int>& windows, int group, const std::vector<int>& place)
    : pinned_(windows.size()), waiting_(windows.size()), copies_(windows.size()) {
  for (size_t s = 0; s < windows.size(); ++s)
    for (const int at : place) {
      pinned_[s].push_back(std::max(0, at - windows[s] + 1) / group);
      ++waiting_[s][pinned_[s].back()];
    }
}

void PinnedVersions::before_update(const Pipeline& pipe, int s, int version) {
  std::lock_guard<std::mutex> lk(mu_);
  const auto w = waiting_.at(s).find(version);
  if (w == waiting_[s].end() || w->second == 0) return;  // as in 1F1B: its forwards all ran first
  copies_[s][version] = copy_stage_weights(pipe, s);
}

std::vector<torch::Tensor> PinnedVersions::copy_of(int s, int version) const {
  std::lock_guard<std::mutex> lk(mu_);
  const auto c = copies_.at(s).find(version);
  if (c == copies_[s].end())
    throw std::logic_error(fmt::format("stage {} kept no copy of its weights of version {} for a pinned forward", s, version));
  return c->second;
}

void PinnedVersions::ran(int s, int m) {
  std::lock_guard<std::mutex> lk(mu_);
  const int v = pinned_.at(s).at(m);
  if (--waiting_[s][v] == 0) copies_[s].erase(v);
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
