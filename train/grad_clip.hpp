// Gradient-norm clipping (`rrfp train --clip-grad X`), as
// torch.nn.utils.clip_grad_norm_ computes it up to the rounding of the
// total (summed in double here, so that ranks can add their stages'): the
// L2 norm of the per-tensor L2 norms, then every gradient scaled by
// min(1, X / (norm + 1e-6)). Synchronous training clips by the whole
// model's norm (Megatron's --clip-grad across pipeline ranks); under
// --async each stage clips by its own, since a stage updates alone
// (docs/async.md, "Gradient clipping").
#pragma once

#include <torch/torch.h>

#include <vector>

namespace rrfp::train {

// The sum of the squares of the gradients' per-tensor L2 norms (each a
// float, as PyTorch takes them); add several stages' sums, then sqrt.
double grad_sq_norm(const std::vector<torch::Tensor>& grads);

// PyTorch's factor for a total norm: 1 when the norm is within max_norm.
double clip_factor(double total_norm, double max_norm);

// Scales the gradients in place by `factor` (they are the stage's
// accumulation buffers, which the next step zeroes).
void scale_grads(const std::vector<torch::Tensor>& grads, double factor);

// One stage's clip under --async: returns the stage's norm before it.
double clip_stage_grads(const std::vector<torch::Tensor>& grads, double max_norm);

}  // namespace rrfp::train
