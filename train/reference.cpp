#include "train/reference.hpp"

namespace rrfp::train {

ReferenceStep reference_step(const GptModel& model, const std::vector<Microbatch>& mbs) {
  const auto& params = model.all_params();
  for (const auto& p : params) p.t.mutable_grad() = torch::Tensor();
  const int L = model.config().layers;
  ReferenceStep out;
  double sum = 0;
  for (const Microbatch& mb : mbs) {
    torch::Tensor x = model.embed(mb.tokens);
    for (int i = 0; i < L; ++i) x = model.block(i, x);
    torch::Tensor l = GptModel::loss(model.head(x), mb.targets);
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

}  // namespace rrfp::train
