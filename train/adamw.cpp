#include "train/adamw.hpp"

#include <cmath>

namespace rrfp::train {

AdamW::AdamW(std::vector<torch::Tensor> params, AdamWOptions opt) : params_(std::move(params)), opt_(opt) {
  for (const auto& p : params_) {
    m_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous).detach());
    v_.push_back(torch::zeros_like(p, torch::MemoryFormat::Contiguous).detach());
  }
}

void AdamW::step(const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  ++t_;
  const double bc1 = 1.0 - std::pow(opt_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(opt_.beta2, static_cast<double>(t_));
  const double lr = opt_.lr.at(t_);
  for (size_t i = 0; i < params_.size(); ++i) {
    // Through the tensor's data: asynchronous training (docs/async.md)
    // updates a stage while backwards recorded before it are pending, and
    // those must read the new weights (PACI: no stashing), which a version
    // bump would refuse. The same arithmetic either way.
    torch::Tensor p = params_[i].variable_data();
    const torch::Tensor& g = grads[i];
    if (opt_.weight_decay != 0 && p.dim() >= 2) p.mul_(1.0 - lr * opt_.weight_decay);
    m_[i].mul_(opt_.beta1).add_(g, 1.0 - opt_.beta1);
    v_[i].mul_(opt_.beta2).addcmul_(g, g, 1.0 - opt_.beta2);
    auto denom = (v_[i] / bc2).sqrt_().add_(opt_.eps);
    p.addcdiv_(m_[i], denom, -lr / bc1);
  }
}

}  // namespace rrfp::train
