// The plain LibTorch reference: the whole model in one autograd graph, one
// backward per microbatch accumulating into .grad. No pipeline, no StarPU.
// Tests compare the pipeline's gradients with it; perf uses it as the
// baseline loop.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "train/model.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

struct ReferenceStep {
  double loss = 0;                   // mean of microbatch losses
  std::vector<float> mb_losses;
  std::vector<torch::Tensor> grads;  // per parameter, model.all_params() order
};

ReferenceStep reference_step(const Model& model, const std::vector<Microbatch>& mbs);

// The mean loss over `mbs` of the whole model, without gradients (validation).
double eval_loss(const Model& model, const std::vector<Microbatch>& mbs);

}  // namespace rrfp::train
