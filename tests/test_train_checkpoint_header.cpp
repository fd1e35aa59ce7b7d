// A checkpoint whose checksum is right but whose contents no run writes
// (edited by hand or by another tool) is refused by name on --resume,
// never trained on: a step that would wrap (and train for ever), counts
// out of range, a dead generator state, non-finite weights or moments, a
// negative second moment, tensors this model does not have or twice, a
// header that is not an object, a tensor whose shape overflows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {
namespace {

namespace fs = std::filesystem;

TrainOptions tiny() {
  TrainOptions o;
  o.gpt.d_model = 16;
  o.gpt.heads = 2;
  o.gpt.layers = 2;
  o.gpt.seq_len = 16;
  o.stages = 2;
  o.microbatches = 2;
  o.micro_batch_size = 2;
  o.steps = 2;
  o.lr = 1e-2;
  o.executor = "replay";
  return o;
}

class CheckpointHeader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rrfp_ckpt_header_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    o_ = tiny();
    o_.checkpoint_dir = dir_.string();
    train(o_);
    good_ = load_checkpoint(dir_.string());
    o_.resume = true;
    o_.steps = 3;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The good checkpoint edited by `edit`, saved with a right checksum;
  // resuming it is refused with `what` in the message.
  void refused(const std::function<void(Checkpoint&)>& edit, const std::string& what) {
    Checkpoint c = good_;
    edit(c);
    save_checkpoint(dir_.string(), c);
    try {
      train(o_);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
  CkptTensor& tensor(Checkpoint& c, const std::string& prefix) {
    for (auto& t : c.tensors)
      if (t.name.rfind(prefix, 0) == 0) return t;
    throw std::logic_error("no tensor " + prefix);
  }

  fs::path dir_;
  TrainOptions o_;
  Checkpoint good_;
};

TEST_F(CheckpointHeader, CountsOutOfRangeAreRefusedByName) {
  // Untouched, it resumes.
  save_checkpoint(dir_.string(), good_);
  EXPECT_EQ(train(o_).first_step, 3);
  const nlohmann::json huge = nlohmann::json(1000000000000LL), wraps = nlohmann::json(9223372036854775808ULL);
  for (const nlohmann::json& bad : {huge, wraps, nlohmann::json(-1), nlohmann::json(0), nlohmann::json(1.5),
                                    nlohmann::json("2")})
    refused([&](Checkpoint& c) { c.meta["step"] = bad; }, "'step' = " + bad.dump() + " must be an integer from 1");
  refused([](Checkpoint& c) { c.meta["adam_steps"] = -5; }, "'adam_steps' = -5 must be an integer from 0 to 2");
  refused([](Checkpoint& c) { c.meta["adam_steps"] = 1000000000; }, "'adam_steps' = 1000000000");
  refused([](Checkpoint& c) { c.meta["sampler"]["sequences_drawn"] = -1; }, "'sampler.sequences_drawn' = -1");
  refused([](Checkpoint& c) { c.meta["sampler"]["rng"] = {0, 0, 0, 0}; }, "'sampler.rng' is all zeros");
  refused([](Checkpoint& c) { c.meta["sampler"]["rng"] = {1, 2, 3}; }, "'sampler.rng' must list 4 integers");
  refused([](Checkpoint& c) { c.meta["sampler"]["rng"][1] = -7; }, "'sampler.rng' holds -7");
  refused([](Checkpoint& c) { c.meta["format"] = "rrfp-plan"; }, "is a \"rrfp-plan\" file, not a training checkpoint");
  refused([](Checkpoint& c) { c.meta.erase("step"); }, "incomplete header");
}

TEST_F(CheckpointHeader, TensorsNoRunWritesAreRefusedByName) {
  refused([&](Checkpoint& c) { tensor(c, "param/").data[0] = std::numeric_limits<float>::quiet_NaN(); },
          "holds values that are not finite");
  refused([&](Checkpoint& c) { tensor(c, "adam_m/").data[1] = std::numeric_limits<float>::infinity(); },
          "holds values that are not finite");
  refused([&](Checkpoint& c) { tensor(c, "adam_v/").data[0] = -1; }, "holds negative values (a second moment)");
  refused([](Checkpoint& c) { c.tensors.push_back({"param/extra", {1}, {0.f}}); },
          "holds a tensor 'param/extra' this model does not have");
  refused([](Checkpoint& c) { c.tensors.push_back(c.tensors.front()); }, "twice");
}

TEST(CheckpointDecode, HeadersAndShapesNoRunWritesAreRefused) {
  Checkpoint c;
  c.meta = nlohmann::json::array({1, 2});
  try {
    (void)decode_checkpoint(encode_checkpoint(c), "x");
    ADD_FAILURE() << "an array header accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed header: not a JSON object"), std::string::npos) << e.what();
  }
  c.meta = nlohmann::json::object();
  c.tensors = {{"t", {std::int64_t{1} << 62, 4}, {}}};  // the product overflows 64 bits
  EXPECT_THROW((void)decode_checkpoint(encode_checkpoint(c), "x"), CheckpointError);
  c.tensors = {{"t", {-2, -3}, {}}};
  EXPECT_THROW((void)decode_checkpoint(encode_checkpoint(c), "x"), CheckpointError);
  c.tensors = {{"empty", {0, 5}, {}}};  // a zero-size tensor reads back
  const Checkpoint back = decode_checkpoint(encode_checkpoint(c), "x");
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_TRUE(back.tensors[0].data.empty());
}

// A checkpoint of another model is refused as that, not by the first of
// its fields that happens to sort before "model" (enc_layers did).
TEST(CheckpointIdentity, AnotherModelIsNamedFirst) {
  const nlohmann::json meta = {{"model", "gpt-tiny"}, {"gpt", {{"layers", 2}}}, {"seed", 1}};
  const nlohmann::json want = {{"model", "mm-tiny"}, {"enc_layers", 2}, {"gpt", {{"layers", 4}}}, {"seed", 1}};
  try {
    check_identity(want, meta, "ck");
    ADD_FAILURE() << "another model's checkpoint accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint 'ck' was written for model = \"gpt-tiny\", this run has model = "
                                         "\"mm-tiny\""),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rrfp::train
