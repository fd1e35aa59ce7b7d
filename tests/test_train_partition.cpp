// Heterogeneous gpt-tiny (--mlp-widths), uneven partitions (--partition),
// rrfp profile's measurements, and training a tuned plan (--plan) within
// its memory limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "sim/tuner.hpp"
#include "train/model.hpp"
#include "train/profile_model.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {
namespace {

TrainOptions hetero(int layers, std::vector<int> widths) {
  TrainOptions o;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = layers;
  o.gpt.seq_len = 16;
  o.gpt.mlp_widths = std::move(widths);
  o.stages = 2;
  o.microbatches = 4;
  o.micro_batch_size = 2;
  o.steps = 3;
  o.hint = "1f1b";
  o.lr = 1e-2;
  o.deterministic = true;
  return o;
}

std::vector<double> losses(const TrainResult& r) {
  std::vector<double> l;
  for (const auto& s : r.steps) l.push_back(s.loss);
  return l;
}

}  // namespace

TEST(TrainPartition, MlpWidthsShapeTheBlocks) {
  GptConfig c = hetero(3, {0, 32, 128}).gpt;
  GptModel m(c, 1);
  auto count = [&](const std::string& prefix) {
    size_t n = 0;
    for (const auto& p : m.all_params()) n += p.name.rfind(prefix, 0) == 0 ? p.t.numel() : 0;
    return n;
  };
  EXPECT_EQ(count("block0.fc1"), 0u);  // attention only: no MLP at all
  EXPECT_EQ(count("block0.ln2"), 0u);
  EXPECT_EQ(count("block1.fc1.w"), 32u * 16);
  EXPECT_EQ(count("block2.fc2.w"), 16u * 128);
  c.mlp_widths = {0, 32};  // two widths for three blocks
  EXPECT_THROW(c.validate(), SpecError);
  c.mlp_widths = {0, -1, 4};
  EXPECT_THROW(c.validate(), SpecError);
  EXPECT_THROW(parse_int_list("1,x,3", "--mlp-widths"), SpecError);
  EXPECT_EQ(parse_int_list("0,64,128", "--mlp-widths"), (std::vector<int>{0, 64, 128}));
}

TEST(TrainPartition, UnevenPartitionsTrainTheSameModel) {
  // The partition moves blocks between stages, not the math: deterministic
  // runs give the plain loop's losses bit for bit whatever the cuts.
  TrainOptions o = hetero(4, {0, 64, 0, 128});
  o.executor = "plain";
  const auto want = losses(train(o));
  o.executor = "starpu";
  for (std::vector<int> cut : {std::vector<int>{}, {1, 3}, {3, 1}, {0, 4}, {4, 0}}) {
    o.partition = cut;
    EXPECT_EQ(losses(train(o)), want) << "partition of " << cut.size() << " stages";
  }
  // The asymmetric Chimera: three stages, the directions cut at different
  // blocks (down after stage 0, up after stage 1), one weight set per stage.
  o.hint = "chimera-asym";
  for (std::vector<int> cut : {std::vector<int>{1, 1, 2}, {0, 3, 1}}) {
    o.partition = cut;
    EXPECT_EQ(losses(train(o)), want) << "chimera-asym, partition " << cut[0] << "," << cut[1] << "," << cut[2];
  }
  o.hint = "1f1b";
  o.partition = {2, 2, 0};
  EXPECT_THROW(train(o), SpecError);  // three stages for a 2-stage hint
  o.partition = {2, 1};
  EXPECT_THROW(train(o), SpecError);  // a block left out
  o.stages = 3;
  o.partition = {2, 0, 2};
  EXPECT_THROW(train(o), SpecError);  // an empty middle stage
}

TEST(TrainPartition, ProfileMeasuresEveryLayer) {
  ProfileOptions po;
  po.model = hetero(3, {0, 0, 256});
  po.repetitions = 3;
  const ModelProfile p = profile_model(po);
  ASSERT_EQ(p.layers.size(), 5u);  // embed, 3 blocks, head
  EXPECT_EQ(p.layers.front().name, "embed");
  EXPECT_EQ(p.layers.back().name, "head");
  EXPECT_EQ(p.blocks(), 3);
  for (const LayerProfile& l : p.layers) {
    EXPECT_GT(l.f.mean_s, 0) << l.name;
    EXPECT_GT(l.b.mean_s, 0) << l.name;
    EXPECT_GT(l.bw.mean_s, 0) << l.name;
    EXPECT_GT(l.weight_bytes, 0) << l.name;
  }
  // The wide block holds more weights and activations than an attention-only one.
  EXPECT_GT(p.layers[3].weight_bytes, 4 * p.layers[1].weight_bytes);
  EXPECT_GT(p.layers[3].activation_bytes, p.layers[1].activation_bytes);
  EXPECT_EQ(p.message_bytes.size(), 4u);
  EXPECT_EQ(p.message_bytes[0], 2.0 * 16 * 16 * 4);  // b x T x d floats
  EXPECT_EQ(p.config, (nlohmann::json{{"vocab", 256}, {"d_model", 16}, {"heads", 2}, {"layers", 3},
                                      {"seq_len", 16}, {"mlp_widths", {0, 0, 256}}}));
}

// A profile of tensor-parallel groups: a member's passes (their
// all-reduces included), its shard of the weights and its activations,
// measured with the members on threads of their own (TSan runs this).
TEST(TrainPartition, ProfileOfTensorParallelGroupsIsAMembers) {
  ProfileOptions po;
  po.model = hetero(3, {0, 0, 256});
  po.repetitions = 2;
  po.devices = 1;
  const ModelProfile whole = profile_model(po);
  po.model.tensor_parallel = 2;
  const ModelProfile member = profile_model(po);
  EXPECT_EQ(whole.tensor_parallel, 1);
  EXPECT_EQ(member.tensor_parallel, 2);
  EXPECT_EQ(member.executor, "starpu");
  EXPECT_EQ(member.config, whole.config);
  for (int l : {1, 3}) {  // an attention-only block and the wide one
    EXPECT_GT(member.layers[l].f.mean_s, 0);
    EXPECT_LT(member.layers[l].weight_bytes, 0.6 * whole.layers[l].weight_bytes) << l;
    EXPECT_LT(member.layers[l].activation_bytes, 0.8 * whole.layers[l].activation_bytes) << l;
    EXPECT_GT(member.layers[l].activation_bytes, 0.4 * whole.layers[l].activation_bytes) << l;
  }
  // The embedding and the head are copies on every member.
  EXPECT_EQ(member.layers[0].weight_bytes, whole.layers[0].weight_bytes);
  EXPECT_EQ(member.layers[4].weight_bytes, whole.layers[4].weight_bytes);
  po.executor = "plain";
  EXPECT_THROW((void)profile_model(po), SpecError);
}

namespace {

// Tunes under a limit just below what the unconstrained plan needs (or at
// it, when nothing fits below), trains the plan and checks each device's
// measured activation peak plus its weights' AdamW state against the limit.
// Returns the plan and its options (the limit in to.memory_bytes).
std::pair<Plan, TrainOptions> train_tuned_within_limit(const ModelProfile& prof, const TrainOptions& model,
                                                       TuneOptions& to) {
  const Plan free = tune(prof, to);
  to.memory_bytes = *std::max_element(free.memory_bytes.begin(), free.memory_bytes.end()) * 0.95;
  Plan plan;
  try {
    plan = tune(prof, to);
  } catch (const SpecError&) {
    to.memory_bytes /= 0.95;
    plan = tune(prof, to);
  }
  const std::string path = ::testing::TempDir() + "/train_plan_" + plan.placement + ".json";
  write_plan(path, plan);
  TrainOptions o = model;
  o.plan_path = path;
  o.steps = 2;
  const TrainResult r = train(o);
  EXPECT_EQ(r.model_stages, static_cast<int>(plan.counts.size()));
  // Measured: each device's activation peak plus its stages' AdamW state.
  const Hint h = plan_hint(plan);
  const auto& peaks = r.steps.back().peak_activation_per_device;
  EXPECT_EQ(peaks.size(), static_cast<size_t>(plan.devices));
  for (int d = 0; d < plan.devices && d < static_cast<int>(peaks.size()); ++d) {
    double weights = 0;  // every copy the device holds (a bidirectional plan: one per direction)
    for (int s = 0; s < h.spec().stages; ++s) {
      bool here = false;
      for (int p = 0; p < h.spec().pipelines(); ++p) here = here || h.spec().placement[p][s] == d;
      if (here) weights += plan.costs.weight_bytes[s];
    }
    const double act = static_cast<double>(peaks[d]);
    EXPECT_GT(act, 0) << "device " << d;
    EXPECT_LE(act + kStateCopies * weights, to.memory_bytes)
        << "device " << d << ", plan " << plan.placement << " " << plan.schedule << " predicted " << plan.memory_bytes[d];
  }
  return {plan, o};
}

}  // namespace

TEST(TrainPartition, TunedPlanTrainsWithinItsMemoryLimit) {
  ProfileOptions po;
  po.model = hetero(6, {0, 0, 0, 0, 256, 256});
  po.repetitions = 2;
  const ModelProfile prof = profile_model(po);
  TuneOptions to;
  to.devices = 2;
  to.microbatches = 4;
  // Chimera's two copies of a stage are counted on their own devices.
  TuneOptions bidir = to;
  bidir.placements = {"bidirectional"};
  const Plan b = train_tuned_within_limit(prof, po.model, bidir).first;
  EXPECT_EQ(b.placement, "bidirectional");
  to.placements = {"linear", "interleaved:2", "vshape"};
  auto [plan, o] = train_tuned_within_limit(prof, po.model, to);
  const std::string path = o.plan_path;
  // A plan for another model, or with flags it fixes, is refused.
  TrainOptions other = o;
  other.gpt.mlp_widths = {0, 0, 0, 0, 256, 128};
  EXPECT_THROW(train(other), SpecError);
  other = o;
  other.micro_batch_size = 3;
  EXPECT_THROW(train(other), SpecError);
  // The limit is enforced by the rrfp policies: one that cannot is refused,
  auto message = [](const TrainOptions& t) {
    try {
      train(t);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  other = o;
  other.policy = "eager";
  EXPECT_NE(message(other).find("memory budget"), std::string::npos) << message(other);
  // and a limit the weights and their AdamW state alone exceed is named.
  Plan tight = plan;
  tight.memory_limit_bytes = 1024;
  write_plan(path, tight);
  EXPECT_NE(message(o).find("weights and AdamW state alone exceed"), std::string::npos) << message(o);
}

}  // namespace rrfp::train
