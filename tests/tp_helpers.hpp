// Tensor-parallel gradient checks shared by the gpt-tiny and mm-tiny tests.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
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

// One iteration of `h` on `mbs` by 2 members of `model` on StarPU under
// `policy`, checked against the reference as above; every device's members
// entered their all-reduces in one order.
inline void check_two_members_against_reference(const Model& model, const Hint& h, const std::vector<Microbatch>& mbs,
                                                const std::string& policy) {
  const ReferenceStep ref = reference_step(model, mbs);
  const TaskGraph& g = *h.graph;
  const int n = g.size(), S = h.spec().stages, M = h.spec().microbatches;
  std::vector<std::unique_ptr<Model>> shards;
  std::vector<std::unique_ptr<Pipeline>> pipes;
  for (int t = 0; t < 2; ++t) {
    shards.push_back(tp_member(model, 2, t));
    pipes.push_back(std::make_unique<Pipeline>(*shards[t], S, M, /*deterministic=*/true));
    pipes[t]->begin_step(mbs);
  }
  LocalTpComm comm(h.devices(), 2, 20);
  auto body = [&](int mt) {
    const int id = mt % n, member = mt / n;
    const Task& t = g.task(id);
    TpTaskScope scope(&comm, t.device, member, id);
    pipes[member]->run(t.kind, t.stage, t.mb);
  };
  ExecOptions eo;
  eo.policy = policy;
  eo.tensor_parallel = 2;
  execute(h, body, eo);
  expect_members_match_reference(model, pipes, S, ref);
  for (int d = 0; d < h.devices(); ++d) {
    EXPECT_FALSE(comm.log(d, 0).empty()) << "device " << d << " ran no all-reduce";
    EXPECT_EQ(comm.log(d, 0), comm.log(d, 1)) << "device " << d;
  }
}

}  // namespace rrfp::train::testing
