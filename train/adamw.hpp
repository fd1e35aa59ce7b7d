// AdamW (decoupled weight decay), one instance per stage. Our own rather
// than torch::optim::AdamW so its state is plain tensors we can checkpoint
// in our format and the update order is fixed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "train/lr_schedule.hpp"

namespace rrfp::train {

struct AdamWOptions {
  LrSchedule lr;  // the rate of each update (train/lr_schedule.hpp)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.01;  // applied to matrices only, not to norms or biases
};

class AdamW {
 public:
  AdamW(std::vector<torch::Tensor> params, AdamWOptions opt);
  // One update with these gradients (same order as the params).
  void step(const std::vector<torch::Tensor>& grads);
  std::int64_t steps() const { return t_; }
  // State for checkpoints: exp_avg and exp_avg_sq per param, and the count.
  std::vector<torch::Tensor>& exp_avg() { return m_; }
  std::vector<torch::Tensor>& exp_avg_sq() { return v_; }
  void set_steps(std::int64_t t) { t_ = t; }

 private:
  std::vector<torch::Tensor> params_, m_, v_;
  AdamWOptions opt_;
  std::int64_t t_ = 0;
};

}  // namespace rrfp::train
