// Megatron-style tensor parallelism in gpt-tiny, in one process: with T = 2
// members per device, the gathered gradients of one iteration match the
// plain LibTorch reference (T = 1) within tolerance for several hints,
// stage counts, microbatch counts and both policies; replicated parameters
// get bitwise the same gradient on both members; and the members entered
// their collectives in one order.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hints/generators.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
#include "train/data.hpp"
#include "train/pipeline.hpp"
#include "train/reference.hpp"
#include "train/tp_model.hpp"

namespace rrfp::train {
namespace {

GptConfig tp_config() {
  GptConfig c;
  c.d_model = 16;
  c.heads = 4;
  c.layers = 4;
  c.seq_len = 8;
  return c;
}

std::vector<Microbatch> batch(const GptConfig& c, int M, int b, std::uint64_t seed) {
  auto text = std::make_shared<const std::string>(generate_corpus(seed, 4096));
  Sampler smp(text, c.seq_len, seed);
  return make_microbatches(smp.next(M * b), M, b, c.seq_len);
}

TEST(TrainTensorParallel, ShardingRoundTrips) {
  auto w = torch::arange(6 * 4, torch::kFloat32).view({6, 4});
  for (ShardSpec s : {ShardSpec{0, true}, ShardSpec{0, false}, ShardSpec{1, false}, ShardSpec{}}) {
    std::vector<torch::Tensor> parts = {shard_of(w, s, 0, 2), shard_of(w, s, 1, 2)};
    EXPECT_TRUE(torch::equal(unshard(parts, s), w)) << s.dim << s.qkv;
  }
  // q, k and v each give the member its own heads: rows 0, 2, 4 of 6 go to member 0.
  auto q0 = shard_of(w, {0, true}, 0, 2);
  EXPECT_TRUE(torch::equal(q0[1], w[2]));
}

TEST(TrainTensorParallel, GradientsMatchOneMember) {
  torch::set_num_threads(1);
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  const GptConfig cfg = tp_config();
  const GptModel model(cfg, 11);
  int ran = 0;
  for (const char* policy : {"rrfp", "rrfp-fixed"})
    for (const char* hint : {"1f1b", "zb-h1", "gpipe"})
      for (int S : {1, 2})
        for (int M : {1, 4}) {
          HintParams hp;
          hp.stages = S;
          hp.microbatches = M;
          const Hint h = make_hint(hint, hp);
          const TaskGraph& g = *h.graph;
          const int n = g.size();
          SCOPED_TRACE(fmt::format("{} {} S={} M={}", policy, hint, S, M));
          const auto mbs = batch(cfg, M, 2, 40 + M);
          const ReferenceStep ref = reference_step(model, mbs);

          std::vector<std::unique_ptr<GptTpShard>> shards;
          std::vector<std::unique_ptr<Pipeline>> pipes;
          for (int t = 0; t < 2; ++t) {
            shards.push_back(std::make_unique<GptTpShard>(model, 2, t));
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
          ++ran;

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
              torch::Tensor full = unshard({g0[i], g1[i]}, spec);
              EXPECT_TRUE(torch::allclose(full, ref.grads[at], 1e-5, 1e-6))
                  << name << " max diff " << (full - ref.grads[at]).abs().max().item<float>();
            }
          }
          EXPECT_EQ(at, model.all_params().size());
          for (int d = 0; d < h.devices(); ++d) {
            EXPECT_FALSE(comm.log(d, 0).empty());
            EXPECT_EQ(comm.log(d, 0), comm.log(d, 1)) << "device " << d;
          }
        }
  EXPECT_EQ(ran, 24);
}

TEST(TrainTensorParallel, RefusesAWidthItCannotSplit) {
  GptConfig c = tp_config();
  c.heads = 2;
  const GptModel model(c, 1);
  EXPECT_THROW(GptTpShard(model, 4, 0), SpecError);
}

}  // namespace
}  // namespace rrfp::train
