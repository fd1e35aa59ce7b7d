#include "train/linear_tape.hpp"

namespace rrfp::train {

namespace {
thread_local std::vector<TapeEntry>* active = nullptr;
}

LinearTape::LinearTape(std::vector<TapeEntry>* into) : prev_(active) { active = into; }
LinearTape::~LinearTape() { active = prev_; }

torch::Tensor tape_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  torch::Tensor z = torch::linear(x, w, b);
  if (active && w.requires_grad()) active->push_back({x, w, b, torch::autograd::impl::gradient_edge(z)});
  return z;
}

// Autograd's linear backward folds the leading dimensions into one
// ([N, in] x [in, out]) and computes dW = dz^T x with one mm, db as a sum
// over the folded rows; the same calls here give the same bits.
torch::Tensor linear_weight_grad(const TapeEntry& e, const torch::Tensor& dz) {
  const auto dz2 = dz.reshape({-1, dz.size(-1)});
  const auto x2 = e.x.reshape({-1, e.x.size(-1)});
  return dz2.t().mm(x2);
}

torch::Tensor linear_bias_grad(const torch::Tensor& dz) { return dz.reshape({-1, dz.size(-1)}).sum(0); }

}  // namespace rrfp::train
