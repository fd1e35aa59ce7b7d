// Tensor-parallel gradient checks shared by the gpt-tiny and mm-tiny tests.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <vector>

#include "train/model.hpp"
#include "train/pipeline.hpp"
#include "train/reference.hpp"
#include "train/tp_model.hpp"

namespace rrfp::train::testing {

// After one iteration of 2 members over S stages: the loss matches the
// plain LibTorch reference, the gathered gradients match its gradients
// (rtol 1e-5, atol 1e-6: the row-parallel products sum in another order),
// and every copied parameter's gradient is bitwise equal on both members.
inline void expect_members_match_reference(const Model& model, const std::vector<std::unique_ptr<Pipeline>>& pipes,
                                           int S, const ReferenceStep& ref) {
  EXPECT_NEAR(pipes[0]->loss(), ref.loss, 1e-5 * std::abs(ref.loss));
  EXPECT_EQ(pipes[0]->loss(), pipes[1]->loss());
  size_t at = 0;
  for (int s = 0; s < S; ++s) {
    auto g0 = pipes[0]->stage_grads(s), g1 = pipes[1]->stage_grads(s);
    const auto& params = pipes[0]->stage(s).params();
    for (size_t i = 0; i < params.size(); ++i, ++at) {
      const std::string& name = params[i].name;
      ASSERT_EQ(name, model.all_params()[at].name);
      const ShardSpec spec = shard_spec(name);
      if (spec.dim < 0) {
        EXPECT_TRUE(torch::equal(g0[i], g1[i])) << name << ": replicas disagree";
      }
      const torch::Tensor full = unshard({g0[i], g1[i]}, spec);
      EXPECT_TRUE(torch::allclose(full, ref.grads[at], 1e-5, 1e-6))
          << name << " max diff " << (full - ref.grads[at]).abs().max().item<float>();
    }
  }
  EXPECT_EQ(at, model.all_params().size());
}

}  // namespace rrfp::train::testing
