// Hand-edited profiles and input files: a field of the wrong type or out
// of range is named with its file (not nlohmann's bare message), and a path
// that is a device or a huge file is refused by its size, not read until
// memory runs out.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "graph/input_file.hpp"
#include "plot/timeline.hpp"
#include "sim/json_file.hpp"
#include "sim/plan.hpp"
#include "sim/profile.hpp"
#include "sim/tuner.hpp"
#include "synthetic_profile.hpp"

namespace rrfp {
namespace {

void refused(const nlohmann::json& j, const std::string& what) {
  try {
    (void)parse_profile(j, "edited.json");
    ADD_FAILURE() << "accepted: " << what;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(FileFields, ProfileFieldsAreNamedWithTheirFile) {
  const nlohmann::json good = profile_json(synthetic({1, 2}));
  EXPECT_NO_THROW((void)parse_profile(good, "edited.json"));
  auto with = [&](auto edit) {
    nlohmann::json j = good;
    edit(j);
    return j;
  };
  refused(with([](auto& j) { j["model"] = 3; }), "edited.json: 'model' = 3 must be a string");
  refused(with([](auto& j) { j["executor"] = 1; }), "edited.json: 'executor' = 1 must be a string");
  refused(with([](auto& j) { j["machine"] = nullptr; }), "'machine' = null must be a string");
  refused(with([](auto& j) { j["layers"][1]["name"] = 5; }), "edited.json: layer 1: 'name' = 5 must be a string");
  refused(with([](auto& j) { j["repetitions"] = -1; }), "repetitions -1 must be an integer from 0");
  refused(with([](auto& j) { j["config"]["d_model"] = "16"; }), "config 'd_model' = \"16\" must be a positive integer");
  refused(with([](auto& j) { j["config"]["heads"] = -2; }), "config 'heads' = -2 must be a positive integer");
  refused(with([](auto& j) { j["format"] = 7; }), "is not an rrfp profile");
  refused(with([](auto& j) { j["version"] = 99; }), "edited.json: profile format version 99; this rrfp reads version 1");
  refused(with([](auto& j) { j.erase("model"); }), "edited.json: 'model' is missing (gpt-tiny or mm-tiny)");
  refused(with([](auto& j) { j["model"] = "mm-tiny"; }), "an mm-tiny profile's config needs 'enc_layers'");
  refused(with([](auto& j) { j["message_bytes"] = "x"; }), "'message_bytes' = \"x\" must be a list");
  refused(with([](auto& j) { j["repetitions"] = "x"; }), "repetitions \"x\" must be an integer");
}

// The JSON library's own words, without its "[json.exception...]" tag.
TEST(FileFields, UnreadableJsonSaysWhyInPlainWords) {
  const std::string path = ::testing::TempDir() + "/rrfp_truncated.json";
  std::ofstream(path) << "{\"format\": ";
  try {
    (void)read_json_file(path, "plan");
    ADD_FAILURE() << "a truncated file was read";
  } catch (const SpecError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("'" + path + "' is not valid JSON: parse error at line 1"), std::string::npos) << w;
    EXPECT_EQ(w.find("[json.exception"), std::string::npos) << w;
  }
}

TEST(FileFields, DevicesAndHugeFilesAreRefusedBySize) {
  const std::string path = ::testing::TempDir() + "/rrfp_capped.txt";
  std::ofstream(path) << std::string(3000, 'x');
  EXPECT_EQ(read_file_capped(path, "schedule", 4096).size(), 3000u);
  try {
    (void)read_file_capped(path, "plan", 2048);
    ADD_FAILURE() << "a file over the cap was read";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("plan '" + path + "' is larger than 0 MiB"), std::string::npos) << e.what();
  }
  // An endless device: refused at the cap (1 GiB for JSON would take a
  // while; the CSV reader's 256 MiB cap is the same code).
  EXPECT_THROW((void)read_file_capped("/dev/zero", "plan", std::size_t{1} << 20), SpecError);
  EXPECT_THROW((void)read_json_file("/nonexistent/p.json", "plan"), SpecError);
}

// A trace's pid and tid name a track: integers, compared as a pair (they
// were once folded into one number that overflowed for large pids).
TEST(FileFields, TraceTrackIdsAreIntegersAndDistinct) {
  const std::string path = ::testing::TempDir() + "/rrfp_pid_trace.json";
  auto write = [&](const nlohmann::json& pid_a, const nlohmann::json& tid_b) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back({{"ph", "X"}, {"name", "0F0"}, {"pid", pid_a}, {"tid", 0}, {"ts", 0}, {"dur", 10}});
    ev.push_back({{"ph", "X"}, {"name", "1F0"}, {"pid", 0}, {"tid", tid_b}, {"ts", 10}, {"dur", 10}});
    std::ofstream(path) << nlohmann::json{{"traceEvents", ev}}.dump();
  };
  write(1, 1000003);  // pid 1 and tid 1000003 of pid 0 folded into one number once: one track
  EXPECT_EQ(read_chrome_trace(path).tracks.size(), 2u);
  write(9e18, 0);
  EXPECT_THROW((void)read_chrome_trace(path), SpecError);
  write(18446744073709551615ULL, 0);
  EXPECT_THROW((void)read_chrome_trace(path), SpecError);
}

// A plan's stage costs were summed over its partition: moving a block by
// hand would leave both the prediction and `rrfp train --plan`'s memory
// budget on the old costs, so the edit is refused. Plans from before the
// check (no "blocks") are read as they are.
TEST(FileFields, APlanPartitionEditedWithoutItsCostsIsRefused) {
  TuneOptions o;
  o.devices = 2;
  o.microbatches = 4;
  o.placements = {"linear"};
  const Plan plan = tune(synthetic({1, 2, 3, 4}), o);
  ASSERT_EQ(plan.counts.size(), 2u);
  nlohmann::json j = plan_json(plan);
  ASSERT_EQ(j["stages"][1]["blocks"], plan.counts[1]);
  std::swap(j["partition"][0], j["partition"][1]);
  if (plan.counts[0] == plan.counts[1]) j["partition"] = {plan.counts[0] - 1, plan.counts[1] + 1};
  try {
    (void)parse_plan(j, "edited.json");
    ADD_FAILURE() << "an edited partition was read with its old costs";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("edited.json: stage 0's costs are of " + std::to_string(plan.counts[0]) +
                                         " blocks, the partition gives it"),
              std::string::npos)
        << e.what();
  }
  for (auto& s : j["stages"]) s.erase("blocks");  // an older plan: taken as it is
  EXPECT_NO_THROW((void)parse_plan(j, "old.json"));
}

}  // namespace
}  // namespace rrfp
