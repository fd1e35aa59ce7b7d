#include "train/reference.hpp"

#include "train/cuda_stream.hpp"

namespace rrfp::train {

ReferenceStep reference_step(const Model& model, const std::vector<Microbatch>& mbs) {
  const auto& params = model.all_params();
  for (const auto& p : params) p.t.mutable_grad() = torch::Tensor();
  const StageRange all = model.partition(1)[0];
  ReferenceStep out;
  double sum = 0;
  for (const Microbatch& mb : mbs) {
    torch::Tensor l = Model::loss(model.stage_forward(all, true, true, {}, mb), mb.targets);
    out.mb_losses.push_back(l.item<float>());
    sum += out.mb_losses.back();
    (l / static_cast<double>(mbs.size())).backward();
  }
  out.loss = sum / static_cast<double>(mbs.size());
  for (const auto& p : params) {
    out.grads.push_back(p.t.grad().clone());
    p.t.mutable_grad() = torch::Tensor();
  }
  return out;
}

double eval_loss(const Model& model, const std::vector<Microbatch>& mbs) {
  torch::NoGradGuard no_grad;
  const StageRange all = model.partition(1)[0];
  double sum = 0;
  for (Microbatch mb : mbs) {  // a copy: --cuda moves it to the model's GPU
    to_device(mb, model.device());
    sum += Model::loss(model.stage_forward(all, true, true, {}, mb), mb.targets).item<float>();
  }
  return mbs.empty() ? 0.0 : sum / static_cast<double>(mbs.size());
}

}  // namespace rrfp::train
