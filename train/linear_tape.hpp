// Deferred weight gradients for the split backward (zero-bubble style).
//
// A linear layer's backward is two products of equal cost: dx = dz W for the
// layer below, and dW = dz^T x for the optimizer. B needs only the first, W
// only the second. The models call tape_linear() below instead of torch::linear;
// while a LinearTape is active on the calling thread (a pipeline F), each
// call records its input x and where its output z enters the graph. B then asks autograd for the stage
// input's gradient and for dz of every recorded output (and the gradients of
// the few parameters that are not linear weights: norms, embeddings); W
// computes dW = dz^T x and db = sum(dz) itself, with no second pass through
// the graph. The products are the ones autograd itself uses for a linear
// layer, so B + W gives bitwise the gradients of one fused backward.
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/torch.h>

#include <vector>

namespace rrfp::train {

struct TapeEntry {
  torch::Tensor x, w, b;  // input, weight, bias (may be undefined)
  // Where the output's gradient enters the graph: B asks autograd for dz
  // there. An edge, not the output itself, so the tape keeps no activation
  // alive that autograd would have freed.
  torch::autograd::Edge z;
};

// Records into `into` the tape_linear() calls of this thread while alive.
class LinearTape {
 public:
  explicit LinearTape(std::vector<TapeEntry>* into);
  ~LinearTape();
  LinearTape(const LinearTape&) = delete;
  LinearTape& operator=(const LinearTape&) = delete;

 private:
  std::vector<TapeEntry>* prev_;
};

// torch::linear, recorded when a LinearTape is active on this thread.
torch::Tensor tape_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b = {});

// The weight gradient of a recorded linear from its output gradient dz, as
// autograd's linear backward computes it; and the bias gradient.
torch::Tensor linear_weight_grad(const TapeEntry& e, const torch::Tensor& dz);
torch::Tensor linear_bias_grad(const torch::Tensor& dz);

}  // namespace rrfp::train
