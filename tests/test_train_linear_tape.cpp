// The split backward's deferred weight gradients (train/linear_tape.hpp):
// recorded only under a tape, bitwise autograd's own linear backward, and W
// after B needs no autograd graph.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/linear_tape.hpp"
#include "train/model.hpp"
#include "train/pipeline.hpp"
#include "tests/train_helpers.hpp"

namespace rrfp::train {
namespace {

TEST(LinearTape, RecordsOnlyWhileActiveAndOnlyTrainableWeights) {
  auto x = torch::randn({3, 4});
  auto w = torch::randn({5, 4}).requires_grad_(true);
  auto frozen = torch::randn({5, 4});
  std::vector<TapeEntry> tape;
  tape_linear(x, w);
  EXPECT_TRUE(tape.empty());
  {
    LinearTape on(&tape);
    tape_linear(x, w);
    tape_linear(x, frozen);  // nothing to differentiate
    {
      std::vector<TapeEntry> inner;
      LinearTape nested(&inner);
      tape_linear(x, w);
      EXPECT_EQ(inner.size(), 1u);
    }
    tape_linear(x, w);  // back to the outer tape
  }
  tape_linear(x, w);
  EXPECT_EQ(tape.size(), 2u);
}

// dW = dz^T x and db = sum(dz), computed by hand, are bitwise what autograd
// gives for torch::linear: 2-D and 3-D inputs, with and without a bias.
TEST(LinearTape, WeightGradientsAreBitwiseAutograds) {
  torch::manual_seed(3);
  for (bool three_d : {false, true})
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(three_d ? "3-D" : "2-D") + (bias ? " with bias" : ""));
      auto x = (three_d ? torch::randn({2, 7, 16}) : torch::randn({7, 16})).requires_grad_(true);
      auto w = torch::randn({12, 16}).requires_grad_(true);
      auto b = bias ? torch::randn({12}).requires_grad_(true) : torch::Tensor();
      std::vector<TapeEntry> tape;
      torch::Tensor z;
      {
        LinearTape on(&tape);
        z = tape_linear(x, w, b);
      }
      ASSERT_EQ(tape.size(), 1u);
      auto y = torch::gelu(z).sum();
      std::vector<torch::Tensor> wrt = {x, w};
      if (bias) wrt.push_back(b);
      auto ref = torch::autograd::grad({y}, wrt, {}, /*retain_graph=*/true);
      auto dz = torch::autograd::grad({y}, {z})[0];
      EXPECT_TRUE(torch::equal(linear_weight_grad(tape[0], dz), ref[1]));
      if (bias) {
        EXPECT_TRUE(torch::equal(linear_bias_grad(dz), ref[2]));
      }
    }
}

// B frees the autograd graph; W then runs from the tape alone. A second B
// (which would need the graph) is refused as an order error, not a crash.
TEST(LinearTape, WeightPassRunsAfterTheGraphIsFreed) {
  const GptConfig c = testing::small_gpt(2, 2);
  GptModel model(c, 7);
  Pipeline pipe(model, 2, 1, /*deterministic=*/true);
  pipe.begin_step(testing::corpus_batch(c, 1, 2, 5));
  pipe.run(Kind::F, 0, 0);
  pipe.run(Kind::F, 1, 0);
  pipe.run(Kind::B, 1, 0);
  pipe.run(Kind::B, 0, 0);
  EXPECT_THROW(pipe.run(Kind::B, 1, 0), std::logic_error);
  pipe.run(Kind::W, 0, 0);
  pipe.run(Kind::W, 1, 0);
  EXPECT_THROW(pipe.run(Kind::W, 1, 0), std::logic_error);  // W twice
  for (int s = 0; s < 2; ++s)
    for (const auto& g : pipe.stage_grads(s)) EXPECT_TRUE(g.defined() && g.abs().sum().item<float>() > 0);
}

}  // namespace
}  // namespace rrfp::train
