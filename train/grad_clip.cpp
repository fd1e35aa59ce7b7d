#include "train/grad_clip.hpp"

#include <cmath>
#include <cstdint>

namespace rrfp::train {

double grad_sq_norm(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> norms;
  for (const auto& g : grads)
    if (g.defined()) norms.push_back(g.detach().norm(2));
  if (norms.empty()) return 0;
  // One copy to the host for all of them (on a GPU: one wait, not one a tensor).
  const torch::Tensor host = torch::stack(norms).to(torch::kCPU, torch::kFloat32).contiguous();
  const float* n = host.data_ptr<float>();
  double sq = 0;
  for (std::int64_t i = 0; i < host.numel(); ++i) sq += static_cast<double>(n[i]) * n[i];
  return sq;
}

double clip_factor(double total_norm, double max_norm) {
  // In float, as clip_grad_norm_'s tensors are: a norm at exactly the
  // limit scales by the same factor there and here.
  const float f = static_cast<float>(max_norm) / (static_cast<float>(total_norm) + 1e-6f);
  return f < 1.0f ? f : 1.0;
}

void scale_grads(const std::vector<torch::Tensor>& grads, double factor) {
  if (factor == 1.0) return;  // PyTorch multiplies by 1.0 too: no bit changes
  torch::NoGradGuard no_grad;
  for (const auto& g : grads)
    if (g.defined()) g.mul_(factor);
}

double clip_stage_grads(const std::vector<torch::Tensor>& grads, double max_norm) {
  const double norm = std::sqrt(grad_sq_norm(grads));
  scale_grads(grads, clip_factor(norm, max_norm));
  return norm;
}

}  // namespace rrfp::train
