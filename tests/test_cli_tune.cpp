// rrfp profile, rrfp tune, and --profile / --plan in sim, bench and train,
// end to end through the command line.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace {

std::string tmp(const std::string& n) { return ::testing::TempDir() + n; }

const std::string kModel = "--layers 4 --d-model 16 --heads 2 --seq-len 16 --micro-batch-size 2 --mlp-widths 0,0,2048,2048";

// One profile for the whole file: measuring takes a second.
const std::string& profile() {
  static const std::string path = [] {
    const std::string p = tmp("cli_profile.json");
    auto r = run_cli("profile " + kModel + " --repetitions 3 -o " + p);
    EXPECT_EQ(r.code, 0) << r.out;
    return p;
  }();
  return path;
}

// `rrfp sim --plan` prints "mean step over 5 seeds X ms (predicted when
// tuned: X ms)": the same X.
void expect_mean_is_predicted(const std::string& out) {
  const size_t at = out.find("mean step over ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  const size_t seeds = line.find("seeds "), pred = line.find("tuned: ");
  ASSERT_TRUE(seeds != std::string::npos && pred != std::string::npos) << line;
  EXPECT_EQ(line.substr(seeds + 6, line.find(' ', seeds + 6) - seeds - 6),
            line.substr(pred + 7, line.find(' ', pred + 7) - pred - 7))
      << line;
}

// A memory limit (MB, for --memory-mb) just above what `plan` needs on its
// fullest device: a tune under it has to keep every device within it.
std::string just_above_its_memory(const nlohmann::json& plan) {
  double need = 0;
  for (double m : plan["memory_bytes"]) need = std::max(need, m);
  return std::to_string(need / 1048576 * 1.01);
}

}  // namespace

TEST(CliTune, ProfileTuneSimulateAndTrainThePlan) {
  auto t = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 -o " + tmp("cli_plan.json"));
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("balanced partition"), std::string::npos) << t.out;  // it says what it tried
  EXPECT_NE(t.out.find("stop after"), std::string::npos) << t.out;           // and why it stopped
  nlohmann::json plan;
  std::ifstream(tmp("cli_plan.json")) >> plan;
  for (const char* k : {"partition", "placement", "stage_device", "hint_csv", "predicted_step_s", "memory_bytes"})
    EXPECT_TRUE(plan.contains(k)) << k;
  // The plan never replaces the profile it was tuned from.
  auto over = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 -o " + profile());
  EXPECT_EQ(over.code, 2);
  EXPECT_NE(over.out.find("is the profile it reads"), std::string::npos) << over.out;

  auto s = run_cli("sim --plan " + tmp("cli_plan.json") + " --json " + tmp("cli_plan_sim.json"));
  ASSERT_EQ(s.code, 0) << s.out;
  expect_mean_is_predicted(s.out);
  nlohmann::json sim;
  std::ifstream(tmp("cli_plan_sim.json")) >> sim;
  EXPECT_GT(sim["makespan_s"].get<double>(), 0);

  // A plan tuned under rrfp-fixed with slack is simulated under them too.
  ASSERT_EQ(run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 --policy rrfp-fixed "
                    "--inflight-slack 1 -o " + tmp("cli_plan_fixed.json")).code, 0);
  auto sf = run_cli("sim --plan " + tmp("cli_plan_fixed.json"));
  ASSERT_EQ(sf.code, 0) << sf.out;
  EXPECT_NE(sf.out.find("policy=rrfp-fixed"), std::string::npos) << sf.out;
  expect_mean_is_predicted(sf.out);

  auto tr = run_cli("train " + kModel + " --plan " + tmp("cli_plan.json") + " --steps 2 --quiet");
  EXPECT_EQ(tr.code, 0) << tr.out;
  auto clash = run_cli("train " + kModel + " --plan " + tmp("cli_plan.json") + " --hint gpipe --steps 1");
  EXPECT_EQ(clash.code, 2) << clash.out;
  EXPECT_NE(clash.out.find("drop --hint"), std::string::npos) << clash.out;
  auto other = run_cli("train --layers 4 --d-model 16 --heads 2 --seq-len 16 --micro-batch-size 2 --plan " +
                       tmp("cli_plan.json") + " --steps 1");
  EXPECT_EQ(other.code, 2) << other.out;
  EXPECT_NE(other.out.find("was tuned for"), std::string::npos) << other.out;
}

// Chimera's placement (a copy of each stage per direction): tuned, within a
// memory limit, simulated and trained from the plan, which names its zoo hint.
TEST(CliTune, BidirectionalPlanUnderAMemoryLimitTrains) {
  // Chimera's placement and its asymmetric variant (chimera-asym).
  for (const auto& [placement, schedule] : {std::pair<std::string, std::string>{"bidirectional", "chimera"},
                                            {"bidirectional-asym", "chimera-asym"}}) {
    const std::string plan_path = tmp("cli_plan_" + placement + ".json");
    const std::string tune = "tune --profile " + profile() + " --devices 2 --microbatches 4 --placements " + placement;
    auto free = run_cli(tune + " -o " + plan_path);
    ASSERT_EQ(free.code, 0) << free.out;
    nlohmann::json plan;
    std::ifstream(plan_path) >> plan;
    EXPECT_EQ(plan["placement"], placement);
    EXPECT_EQ(plan["schedule"], schedule);
    auto t = run_cli(tune + " --memory-mb " + just_above_its_memory(plan) + " -o " + plan_path);
    ASSERT_EQ(t.code, 0) << t.out;
    auto s = run_cli("sim --plan " + plan_path);
    EXPECT_EQ(s.code, 0) << s.out;
    auto tr = run_cli("train " + kModel + " --plan " + plan_path + " --steps 2 --quiet");
    EXPECT_EQ(tr.code, 0) << placement << ": " << tr.out;
  }
}

// A tuned plan with --tensor-parallel 2: every device of the plan is a
// group of 2 members, with the plan's partition, placement, schedule and
// memory limit (held on the profiled whole-device sizes, so conservative).
TEST(CliTune, PlanRunsWithTensorParallelGroups) {
  const std::string plan_path = tmp("cli_plan_tp.json");
  const std::string tune =
      "tune --profile " + profile() + " --devices 2 --microbatches 4 --placements bidirectional";
  ASSERT_EQ(run_cli(tune + " -o " + plan_path).code, 0);
  nlohmann::json plan;
  std::ifstream(plan_path) >> plan;
  auto t = run_cli(tune + " --memory-mb " + just_above_its_memory(plan) + " -o " + plan_path);
  ASSERT_EQ(t.code, 0) << t.out;
  std::ifstream(plan_path) >> plan;
  ASSERT_GT(plan["memory_limit_bytes"].get<double>(), 0);
  std::vector<std::vector<double>> losses;
  for (int tp : {1, 2}) {
    const std::string out = tmp("cli_plan_tp" + std::to_string(tp) + ".json");
    auto tr = run_cli("train " + kModel + " --plan " + plan_path + " --steps 3 --deterministic --quiet " +
                      "--tensor-parallel " + std::to_string(tp) + " --json " + out);
    ASSERT_EQ(tr.code, 0) << tr.out;
    nlohmann::json j;
    std::ifstream(out) >> j;
    EXPECT_EQ(j["tensor_parallel"], tp);
    EXPECT_EQ(j["hint"], "plan:" + plan["schedule"].get<std::string>());  // the plan's schedule on its 2 devices
    EXPECT_EQ(j["stages"], 2);
    losses.emplace_back();
    for (const auto& st : j["steps"]) {
      losses.back().push_back(st["loss"].get<double>());
      for (double peak : st["peak_activation_bytes_per_device"])  // a member holds at most a device's
        EXPECT_LE(peak, plan["memory_limit_bytes"].get<double>()) << "T=" << tp;
    }
  }
  ASSERT_EQ(losses[0].size(), 3u);
  ASSERT_EQ(losses[1].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(losses[1][i], losses[0][i], 1e-5 * losses[0][i]) << "step " << i + 1;
}

namespace {

// A profile with known costs: blocks 2 and 3 ten times blocks 0 and 1, no spread.
std::string synthetic_profile() {
  nlohmann::json layers = nlohmann::json::array();
  for (double ms : {0.1, 1.0, 1.0, 10.0, 10.0, 0.5}) {
    nlohmann::json pass = {{"mean_s", ms * 1e-3}, {"std_s", 0.0}};
    layers.push_back({{"F", pass}, {"B", pass}, {"W", pass}, {"BW", pass}, {"activation_bytes", 1e5},
                      {"weight_bytes", 1e4}});
  }
  const nlohmann::json j = {{"format", "rrfp-profile"}, {"model", "gpt-tiny"}, {"config", {{"layers", 4}}},
                            {"micro_batch_size", 2}, {"layers", layers}, {"message_bytes", {1, 1, 1, 1, 1}}};
  const std::string path = tmp("cli_synthetic_profile.json");
  std::ofstream(path) << j.dump();
  return path;
}

}  // namespace

TEST(CliTune, ProfileDrivesSimAndBench) {
  // Without a plan: the even partition rrfp train would use.
  const std::string prof = synthetic_profile();
  auto s = run_cli("sim --profile " + prof + " --hint 1f1b --stages 2 --microbatches 4 --json " +
                   tmp("cli_prof_sim.json"));
  ASSERT_EQ(s.code, 0) << s.out;
  auto u = run_cli("sim --profile " + prof + " --partition 3,1 --hint 1f1b --stages 2 --microbatches 4 --json " +
                   tmp("cli_prof_sim31.json"));
  ASSERT_EQ(u.code, 0) << u.out;
  nlohmann::json even, uneven;
  std::ifstream(tmp("cli_prof_sim.json")) >> even;
  std::ifstream(tmp("cli_prof_sim31.json")) >> uneven;
  // Blocks 2 and 3 are the heavy ones: the even split puts both on stage 1
  // (20.5 ms a pass there), the 3,1 cut one on each side (12.1 and 10.5).
  EXPECT_GT(even["makespan_s"].get<double>() / uneven["makespan_s"].get<double>(), 1.3);
  auto b = run_cli("bench --profile " + prof + " --hint 1f1b --stages 2 --microbatches 4 --policy rrfp");
  EXPECT_EQ(b.code, 0) << b.out;
  auto bad = run_cli("sim --profile " + prof + " --partition 3,2 --hint 1f1b --stages 2");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("partition covers 5 blocks"), std::string::npos) << bad.out;
}

TEST(CliTune, BadInputsGetClearErrors) {
  auto missing = run_cli("tune --profile " + tmp("no-such.json") + " --devices 2 -o " + tmp("x.json"));
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("cannot read profile"), std::string::npos) << missing.out;
  std::ofstream(tmp("not_profile.json")) << "{\"format\": \"rrfp-plan\"}";
  auto wrong = run_cli("tune --profile " + tmp("not_profile.json") + " --devices 2 -o " + tmp("x.json"));
  EXPECT_EQ(wrong.code, 2) << wrong.out;
  EXPECT_NE(wrong.out.find("is not an rrfp profile"), std::string::npos) << wrong.out;
  auto tiny = run_cli("tune --profile " + profile() + " --devices 2 --memory-mb 0.001 -o " + tmp("x.json"));
  EXPECT_EQ(tiny.code, 2) << tiny.out;
  EXPECT_NE(tiny.out.find("no plan fits"), std::string::npos) << tiny.out;
  auto many = run_cli("tune --profile " + profile() + " --devices 8 -o " + tmp("x.json"));
  EXPECT_EQ(many.code, 2) << many.out;
  auto overflow = run_cli("sim --profile " + profile() + " --partition 2147483647,2147483647,10 --hint gpipe --stages 3");
  EXPECT_EQ(overflow.code, 2) << overflow.out;
  EXPECT_NE(overflow.out.find("stage 0 has 2147483647 blocks"), std::string::npos) << overflow.out;
  auto noplan = run_cli("sim --plan " + tmp("no-such-plan.json"));
  EXPECT_EQ(noplan.code, 2) << noplan.out;
  EXPECT_NE(noplan.out.find("cannot read plan"), std::string::npos) << noplan.out;
}

// --data-parallel with a plan: every replica runs it; --batch-size counts
// every replica's sequences, as without a plan.
TEST(CliTune, PlanRunsOnEveryDataParallelReplica) {
  const std::string plan = tmp("cli_plan_dp.json"), out = tmp("cli_plan_dp_train.json");
  ASSERT_EQ(run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 -o " + plan).code, 0);
  const std::string model = "train --layers 4 --d-model 16 --heads 2 --seq-len 16 --mlp-widths 0,0,2048,2048 --plan " +
                            plan + " --data-parallel 2 --steps 1 --quiet";
  auto tr = run_cli(model + " --batch-size 16 --json " + out);  // 2 replicas x 4 microbatches x 2 sequences
  ASSERT_EQ(tr.code, 0) << tr.out;
  nlohmann::json j;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["stages"], 4);
  EXPECT_EQ(j["microbatches"], 8);
  EXPECT_EQ(j["micro_batch_size"], 2);
  EXPECT_EQ(j["data_parallel"], 2);
  auto small = run_cli(model + " --batch-size 8");
  EXPECT_EQ(small.code, 2);
  EXPECT_NE(small.out.find("was tuned for micro-batch size 2, this run has 1 (--batch-size 8 over 8 microbatches)"),
            std::string::npos)
      << small.out;
  auto s = run_cli("sim --plan " + plan + " --data-parallel 2");
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("devices=4 microbatches=8"), std::string::npos) << s.out;
}

// tune --data-parallel: a plan of 2 replicas of one device; train --plan and
// sim --plan run both replicas without being told, and refuse another count.
TEST(CliTune, DataParallelSearchWritesAPlanOfReplicas) {
  const std::string plan = tmp("cli_plan_dp_tuned.json"), out = tmp("cli_plan_dp_tuned_train.json");
  auto tu = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 --data-parallel 2 -o " + plan);
  ASSERT_EQ(tu.code, 0) << tu.out;
  EXPECT_NE(tu.out.find("data parallel 2: 2 replicas of 1 device, 2 microbatches each"), std::string::npos) << tu.out;
  EXPECT_NE(tu.out.find("plan: 2 replicas of "), std::string::npos) << tu.out;
  const std::string model =
      "train --layers 4 --d-model 16 --heads 2 --seq-len 16 --mlp-widths 0,0,2048,2048 --batch-size 8 --plan " + plan +
      " --steps 1";
  auto tr = run_cli(model + " --quiet --json " + out);
  ASSERT_EQ(tr.code, 0) << tr.out;
  nlohmann::json j;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["data_parallel"], 2);
  EXPECT_EQ(j["stages"], 2);
  EXPECT_EQ(j["microbatches"], 4);
  // The progress line's peak is the fullest device's, not a stage's two
  // copies added up (what a per-device memory limit bounds).
  auto loud = run_cli(model + " --json " + out);
  ASSERT_EQ(loud.code, 0) << loud.out;
  std::ifstream(out) >> j;
  const nlohmann::json& step = j["steps"][0];
  const auto per_device = step["peak_activation_bytes_per_device"].get<std::vector<double>>();
  ASSERT_EQ(per_device.size(), 2u);
  const double fullest = *std::max_element(per_device.begin(), per_device.end());
  EXPECT_LT(fullest, step["peak_activation_bytes"].get<double>());
  const size_t at = loud.out.find("peak act ");
  ASSERT_NE(at, std::string::npos) << loud.out;
  EXPECT_NEAR(std::stod(loud.out.substr(at + 9)), fullest / 1048576, 0.006) << loud.out;
  auto other = run_cli(model + " --data-parallel 3");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.out.find("was tuned for 2 data-parallel replicas; --data-parallel 3 differs"), std::string::npos)
      << other.out;
  auto s = run_cli("sim --plan " + plan);
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("devices=2 microbatches=4"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find(": 2 replicas of "), std::string::npos) << s.out;
  expect_mean_is_predicted(s.out);  // the tuner predicted the replicas, all-reduce included
  auto after = run_cli("sim --plan " + plan + " --mirror-reduce after-graph");  // how copies reduce: not the plan's
  EXPECT_EQ(after.code, 0) << after.out;
  // Tuned for exchanges after the graph over a 1 Gbit/s link: the plan
  // says so, and `rrfp sim --plan` predicts it again.
  const std::string after_plan = tmp("cli_plan_dp_after.json");
  auto ta = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 --data-parallel 2 " +
                    "--bandwidth-gbps 1 --mirror-reduce after-graph -o " + after_plan);
  ASSERT_EQ(ta.code, 0) << ta.out;
  nlohmann::json ap;
  std::ifstream(after_plan) >> ap;
  EXPECT_EQ(ap["mirror_reduce"], "after-graph");
  auto sa = run_cli("sim --plan " + after_plan);
  EXPECT_EQ(sa.code, 0) << sa.out;
  expect_mean_is_predicted(sa.out);
  auto bad_mode = run_cli("tune --profile " + profile() + " --mirror-reduce never -o " + after_plan);
  EXPECT_EQ(bad_mode.code, 2);
  EXPECT_NE(bad_mode.out.find("--mirror-reduce 'never': overlap or after-graph"), std::string::npos) << bad_mode.out;
  auto zero = run_cli("sim --plan " + plan + " --data-parallel 0");
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.out.find("--data-parallel must be at least 1 replica, got 0"), std::string::npos) << zero.out;
  auto au = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 4 --data-parallel auto -o " +
                    tmp("cli_plan_dp_auto.json"));
  EXPECT_EQ(au.code, 0) << au.out;
  EXPECT_NE(au.out.find("data parallel 1: 1 replica of 2 devices, 4 microbatches each"), std::string::npos) << au.out;
  EXPECT_NE(au.out.find("data parallel 2: 2 replicas of 1 device, 2 microbatches each"), std::string::npos) << au.out;
  auto twice = run_cli("tune --profile " + profile() + " --devices 2 --data-parallel 2,2 -o " + plan);
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.out.find("--data-parallel names 2 twice"), std::string::npos) << twice.out;
  auto bad = run_cli("tune --profile " + profile() + " --devices 2 --microbatches 3 --data-parallel 2 -o " + plan);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--data-parallel 2 must divide --devices 2 and --microbatches 3"), std::string::npos)
      << bad.out;
}

// `rrfp profile --tensor-parallel 2` times a member of a group; tune takes
// it beside the whole-device profile, and a plan of groups runs as groups.
TEST(CliTune, TensorParallelProfilesAreSearchedAndTheirPlansRun) {
  const std::string tp2 = tmp("cli_profile_tp2.json"), plan = tmp("cli_plan_tp2_tuned.json");
  auto pr = run_cli("profile " + kModel + " --tensor-parallel 2 --devices 1 --repetitions 3 -o " + tp2);
  ASSERT_EQ(pr.code, 0) << pr.out;
  nlohmann::json member, whole;
  std::ifstream(tp2) >> member;
  std::ifstream(profile()) >> whole;
  EXPECT_EQ(member["tensor_parallel"], 2);
  EXPECT_EQ(whole["tensor_parallel"], 1);
  EXPECT_EQ(member["workers"], 2);  // 1 group of 2 beside 2 whole devices: the same busy workers
  EXPECT_EQ(whole["workers"], 2);
  // The bench splits whole devices' costs over its members itself: a
  // member's costs would be split twice.
  auto bench = run_cli("bench --profile " + tp2 + " --hint 1f1b --stages 2 --tensor-parallel 2 --iterations 1");
  EXPECT_EQ(bench.code, 2) << bench.out;
  EXPECT_NE(bench.out.find("it holds a tensor-parallel member's costs (tensor_parallel 2)"), std::string::npos)
      << bench.out;
  // Block 2's MLP and attention are split, its norms copied: a member holds
  // a little over half.
  const double m = member["layers"][3]["weight_bytes"], w = whole["layers"][3]["weight_bytes"];
  EXPECT_GT(m, 0.5 * w);
  EXPECT_LT(m, 0.55 * w);
  // Its activations too: the heads' and the MLP's are split, the residual
  // stream and the norms' are not.
  const double ma = member["layers"][3]["activation_bytes"], wa = whole["layers"][3]["activation_bytes"];
  EXPECT_GT(ma, 0.5 * wa);
  EXPECT_LT(ma, 0.8 * wa);
  auto both = run_cli("tune --profile " + profile() + "," + tp2 + " --devices 2 --microbatches 4 -o " + plan);
  ASSERT_EQ(both.code, 0) << both.out;
  EXPECT_NE(both.out.find("tensor parallel 1: 2 whole devices"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("tensor parallel 2: 1 group of 2 members"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("placement/schedule pairs over 2 parallel degrees"), std::string::npos) << both.out;
  nlohmann::json picked;
  std::ifstream(plan) >> picked;  // the degree written is the profile's it was tuned on
  EXPECT_EQ(picked["profile"], picked["tensor_parallel"] == 2 ? tp2 : profile());
  EXPECT_EQ(picked["executor"], nullptr);
  EXPECT_EQ(member["executor"], "starpu");
  auto only = run_cli("tune --profile " + tp2 + " --devices 2 --microbatches 4 -o " + plan);
  ASSERT_EQ(only.code, 0) << only.out;
  nlohmann::json limited;
  std::ifstream(plan) >> limited;  // under a limit per member just above what it needs
  only = run_cli("tune --profile " + tp2 + " --devices 2 --microbatches 4 --memory-mb " +
                 just_above_its_memory(limited) + " -o " + plan);
  ASSERT_EQ(only.code, 0) << only.out;
  std::ifstream(plan) >> limited;
  ASSERT_GT(limited["memory_limit_bytes"].get<double>(), 0);
  EXPECT_NE(only.out.find("on 1 group of 2 tensor-parallel members (2 devices)"), std::string::npos) << only.out;
  const std::string out = tmp("cli_plan_tp2_train.json");
  auto tr = run_cli("train " + kModel + " --plan " + plan + " --steps 2 --quiet --json " + out);
  ASSERT_EQ(tr.code, 0) << tr.out;
  nlohmann::json j;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["tensor_parallel"], 2);
  EXPECT_EQ(j["stages"], 1);
  for (const auto& st : j["steps"])  // each member within the plan's limit
    for (double peak : st["peak_activation_bytes_per_device"])
      EXPECT_LE(peak, limited["memory_limit_bytes"].get<double>());
  auto other = run_cli("train " + kModel + " --plan " + plan + " --steps 1 --tensor-parallel 4");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.out.find("was tuned for tensor-parallel groups of 2; --tensor-parallel 4 differs"),
            std::string::npos)
      << other.out;
  auto s = run_cli("sim --plan " + plan);
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("every device a group of 2 tensor-parallel members"), std::string::npos) << s.out;
  expect_mean_is_predicted(s.out);
  auto plain = run_cli("profile " + kModel + " --executor plain --tensor-parallel 2 -o " + tmp("x.json"));
  EXPECT_EQ(plain.code, 2);
  EXPECT_NE(plain.out.find("--tensor-parallel applies to --executor starpu"), std::string::npos) << plain.out;
  // mm-tiny's encoder and language blocks split too: profile, tune, train.
  const std::string mm = "--model mm-tiny --layers 2 --d-model 16 --heads 2 --micro-batch-size 2";
  const std::string mmp = tmp("cli_mm_tp2.json"), mm_plan = tmp("cli_mm_tp2_plan.json");
  auto mp = run_cli("profile " + mm + " --tensor-parallel 2 --devices 1 --repetitions 2 -o " + mmp);
  ASSERT_EQ(mp.code, 0) << mp.out;
  auto mt = run_cli("tune --profile " + mmp + " --devices 2 --microbatches 2 -o " + mm_plan);
  ASSERT_EQ(mt.code, 0) << mt.out;
  EXPECT_NE(mt.out.find("on 1 group of 2 tensor-parallel members"), std::string::npos) << mt.out;
  auto mr = run_cli("train " + mm + " --plan " + mm_plan + " --steps 1 --quiet --json " + out);
  ASSERT_EQ(mr.code, 0) << mr.out;
  std::ifstream(out) >> j;
  EXPECT_EQ(j["tensor_parallel"], 2);
}
