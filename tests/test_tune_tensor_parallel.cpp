// rrfp tune with one profile per tensor-parallel degree: the degree
// searched beside partition, placement, schedule and the data-parallel
// split, on synthetic profiles; profiles and plans keep the degree.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/plan.hpp"
#include "sim/tuner.hpp"
#include "synthetic_profile.hpp"

namespace rrfp {
namespace {

// 8 equal blocks of `ms` milliseconds of forward, measured on groups of T.
ModelProfile blocks_at(int T, double ms) {
  ModelProfile p = synthetic(std::vector<double>(8, ms), 1e5, 1e5);
  p.tensor_parallel = T;
  p.source = "tp" + std::to_string(T) + ".json";
  return p;
}

TuneOptions devices(int d, std::vector<int> data_parallel = {}) {
  TuneOptions o;
  o.devices = d;
  o.microbatches = 4;
  o.data_parallel = std::move(data_parallel);
  return o;
}

std::string error_of(const std::vector<ModelProfile>& profiles, const TuneOptions& o) {
  try {
    (void)tune_profiles(profiles, o);
  } catch (const SpecError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// Each degree's plan is tune() on devices / T groups of its own profile;
// the search keeps the shortest, and the plan says which degree it is.
TEST(TuneTensorParallel, KeepsTheShortestDegreeTunedOnItsGroups) {
  const ModelProfile whole = blocks_at(1, 1.0);
  for (const double member_ms : {0.3, 0.9}) {  // a group 3.3x and 1.1x faster than a device
    const ModelProfile group = blocks_at(2, member_ms);
    const Plan one = tune(whole, devices(4));
    const Plan two = tune(group, devices(2));
    EXPECT_EQ(two.tensor_parallel, 2);
    EXPECT_EQ(two.devices, 2);
    const Plan best = tune_profiles({whole, group}, devices(4));
    const bool groups_win = two.predicted_step_s < one.predicted_step_s;
    EXPECT_EQ(best.tensor_parallel, groups_win ? 2 : 1) << member_ms;
    EXPECT_EQ(best.profile, groups_win ? "tp2.json" : "tp1.json");
    EXPECT_DOUBLE_EQ(best.predicted_step_s, std::min(one.predicted_step_s, two.predicted_step_s));
    // 3.3x faster groups on half the devices win; 1.1x faster ones do not
    // make up for the pipeline's halved width.
    EXPECT_EQ(groups_win, member_ms < 0.5) << one.predicted_step_s << " " << two.predicted_step_s;
  }
  // The log keeps every degree's pairs, each saying its degree.
  const Plan best = tune_profiles({whole, blocks_at(2, 0.3)}, devices(4, {1, 2}));
  std::set<std::pair<int, int>> logged;  // (tensor, data) parallel
  for (const auto& t : best.tried) logged.emplace(t.at("tensor_parallel").get<int>(), t.at("data_parallel").get<int>());
  EXPECT_EQ(logged, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}));
  // One profile of groups alone is tuned on its groups too.
  const Plan only = tune_profiles({blocks_at(2, 1.0)}, devices(4));
  EXPECT_EQ(only.tensor_parallel, 2);
  EXPECT_EQ(only.devices, 2);
}

// The data-parallel degrees each degree's groups can take: 4 devices in
// groups of 2 make 2 groups, which 4 replicas cannot split.
TEST(TuneTensorParallel, DataParallelDegreesAreThoseTheGroupsDivide) {
  const Plan p = tune_profiles({blocks_at(2, 0.3)}, devices(4, {1, 2, 4}));
  EXPECT_EQ(p.tensor_parallel, 2);
  EXPECT_EQ(p.devices * p.data_parallel, 2);
  const std::string m = error_of({blocks_at(2, 0.3)}, devices(4, {4}));
  EXPECT_NE(m.find("tensor parallel 2: no data-parallel degree of 4 divides its 2 groups"), std::string::npos) << m;
  std::vector<std::string> log;
  TuneOptions o = devices(4, {4});
  o.log = [&](const std::string& line) { log.push_back(line); };
  const Plan both = tune_profiles({blocks_at(1, 1.0), blocks_at(2, 0.3)}, o);  // T=1 takes 4 replicas
  EXPECT_EQ(both.tensor_parallel, 1);
  EXPECT_EQ(both.data_parallel, 4);
  bool said = false;
  for (const std::string& line : log)
    said = said || line.find("data parallel 4 left out: 2 groups cannot be split so") != line.npos;
  EXPECT_TRUE(said);
}

TEST(TuneTensorParallel, RefusesProfilesThatDoNotBelongTogether) {
  ModelProfile other = blocks_at(2, 0.5);
  other.micro_batch_size = 8;
  std::string m = error_of({blocks_at(1, 1.0), other}, devices(4));
  EXPECT_NE(m.find("tune profiles of one model, one per tensor-parallel degree"), std::string::npos) << m;
  other = blocks_at(2, 0.5);
  other.config["d_model"] = 64;
  EXPECT_NE(error_of({blocks_at(1, 1.0), other}, devices(4)).find("one per tensor-parallel degree"),
            std::string::npos);
  m = error_of({blocks_at(2, 1.0), blocks_at(2, 0.5)}, devices(4));
  EXPECT_NE(m.find("'tp2.json' and 'tp2.json' both measured tensor-parallel groups of 2"), std::string::npos) << m;
  m = error_of({blocks_at(1, 1.0), blocks_at(4, 0.5)}, devices(2));
  EXPECT_NE(m.find("--devices 2: profile 'tp4.json' measured tensor-parallel groups of 4, which must divide"),
            std::string::npos)
      << m;
  EXPECT_NE(error_of({}, devices(2)).find("no profile given"), std::string::npos);
  // Degrees no split could take are refused up front, whatever the profiles.
  for (const int D : {0, -2, 3}) {
    m = error_of({blocks_at(1, 1.0), blocks_at(2, 0.5)}, devices(4, {1, D}));
    const std::string why = D > 0 ? " must divide --devices 4" : " must be from 1 to";
    EXPECT_NE(m.find("--data-parallel " + std::to_string(D) + why), std::string::npos) << m;
  }
  // Profiles timed one pass at a time and among busy workers do not compare.
  ModelProfile plain = blocks_at(1, 1.0), busy = blocks_at(2, 0.5);
  plain.executor = "plain", busy.executor = "starpu";
  m = error_of({plain, busy}, devices(4));
  EXPECT_NE(m.find("'tp1.json' was measured with --executor plain, 'tp2.json' with --executor starpu"),
            std::string::npos)
      << m;
  // The default MLP widths spelled out or not are the same model.
  ModelProfile spelled = blocks_at(2, 0.5), implied = blocks_at(1, 1.0);
  spelled.config["d_model"] = implied.config["d_model"] = 16;
  spelled.config["mlp_widths"] = std::vector<int>(8, 64);
  EXPECT_EQ(tune_profiles({implied, spelled}, devices(4)).tensor_parallel, 2);
  // Members share the cores: degrees timed among different numbers of busy
  // workers do not compare; a profile that did not record it is taken.
  ModelProfile two = blocks_at(1, 1.0), four = blocks_at(2, 0.5);
  two.workers = 2, four.workers = 4;
  m = error_of({two, four}, devices(4));
  EXPECT_NE(m.find("'tp1.json' was measured among 2 busy workers, 'tp2.json' among 4"), std::string::npos) << m;
  four.workers = 0;
  EXPECT_NO_THROW((void)tune_profiles({two, four}, devices(4)));
  TuneOptions tiny = devices(4);
  tiny.memory_bytes = 1e3;
  m = error_of({blocks_at(1, 1.0), blocks_at(2, 0.5)}, tiny);
  EXPECT_NE(m.find("no tensor-parallel degree fits: tensor parallel 1: "), std::string::npos) << m;
  EXPECT_NE(m.find("; tensor parallel 2: "), std::string::npos) << m;
}

// Profiles and plans keep the degree through their files; files written
// before it read as 1; runs adopt a plan's unless they ask for another.
TEST(TuneTensorParallel, FilesKeepTheDegreeAndRunsAdoptIt) {
  nlohmann::json pj = profile_json(blocks_at(2, 1.0));
  EXPECT_EQ(parse_profile(pj, "p").tensor_parallel, 2);
  pj.erase("tensor_parallel");
  EXPECT_EQ(parse_profile(pj, "p").tensor_parallel, 1);
  for (const nlohmann::json& bad :
       {nlohmann::json(0), nlohmann::json(2.5), nlohmann::json("2"), nlohmann::json(4096)}) {
    pj["tensor_parallel"] = bad;
    EXPECT_THROW((void)parse_profile(pj, "p"), SpecError) << bad.dump();
  }
  pj["tensor_parallel"] = 2;
  pj["workers"] = 4;  // the busy workers it was timed among, kept
  EXPECT_EQ(parse_profile(pj, "p").workers, 4);
  EXPECT_EQ(profile_json(parse_profile(pj, "p"))["workers"], 4);
  pj.erase("workers");
  EXPECT_EQ(parse_profile(pj, "p").workers, 0);  // written before it was recorded
  for (const nlohmann::json& bad : {nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json("4")}) {
    pj["workers"] = bad;
    EXPECT_THROW((void)parse_profile(pj, "p"), SpecError) << bad.dump();
  }
  pj.erase("workers");
  // A degree the model cannot be split into is refused when read.
  auto refused = [](nlohmann::json j, const std::string& what) {
    try {
      (void)parse_profile(j, "p");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  pj["tensor_parallel"] = 2;
  pj["config"]["heads"] = 3;
  refused(pj, "tensor_parallel 2 does not divide the model's heads (3)");
  pj["config"]["heads"] = 4;
  pj["config"]["mlp_widths"] = {64, 64, 64, 64, 64, 64, 64, 33};
  refused(pj, "tensor_parallel 2 does not divide an MLP width (33)");
  pj["config"].erase("mlp_widths");
  pj["model"] = "mm-tiny";  // its encoder and language blocks split as gpt-tiny's
  refused(pj, "an mm-tiny profile's config needs 'enc_layers'");
  pj["config"]["enc_layers"] = 2;
  EXPECT_EQ(parse_profile(pj, "p").tensor_parallel, 2);
  pj["config"]["heads"] = 3;
  refused(pj, "tensor_parallel 2 does not divide the model's heads (3)");
  pj["config"]["heads"] = 4;
  const Plan p = tune_profiles({blocks_at(2, 1.0)}, devices(4));
  nlohmann::json j = plan_json(p);
  const Plan back = parse_plan(j, "plan");
  EXPECT_EQ(back.tensor_parallel, 2);
  EXPECT_EQ(plan_members(back, 1), 2);  // the flag's default means "the plan's"
  EXPECT_EQ(plan_members(back, 2), 2);
  try {
    (void)plan_members(back, 4);
    ADD_FAILURE() << "another degree accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("tuned for tensor-parallel groups of 2; --tensor-parallel 4 differs"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)plan_members(back, 0), SpecError);
  j.erase("tensor_parallel");
  const Plan old = parse_plan(j, "plan");
  EXPECT_EQ(old.tensor_parallel, 1);
  EXPECT_EQ(plan_members(old, 3), 3);  // a plan of whole devices runs on groups of any size
  j["tensor_parallel"] = 0;
  EXPECT_THROW((void)parse_plan(j, "plan"), SpecError);
}

}  // namespace
}  // namespace rrfp
