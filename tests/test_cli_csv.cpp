// CSV hints through the three commands that run them (train, bench, sim):
// the file's dimensions are the run's, a flag that disagrees is an error
// naming both, and no file, however malformed, crashes a command.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

const std::string kZb1p = std::string(RRFP_REFERENCE_DIR) + "/zb1p_2rank_2stagep_compute.csv";
const std::string kDualpipe = std::string(RRFP_REFERENCE_DIR) + "/dualpipev_4rank_10mb.csv";
// Small enough that a training step takes milliseconds.
const std::string kTrain = "train --steps 1 --d-model 16 --heads 2 --seq-len 8 --micro-batch-size 1 --quiet ";
const std::vector<std::string> kCommands = {kTrain, "bench --unit-ms 0.1 ", "sim "};

std::string write_csv(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A clean failure: an "rrfp: error:" line and exit 1 or 2, never a signal.
void expect_clean_error(const std::string& args, const std::string& message) {
  auto r = run_cli(args);
  EXPECT_TRUE(r.code == 1 || r.code == 2) << args << " exited " << r.code << "\n" << r.out;
  EXPECT_NE(r.out.find("rrfp: error:"), std::string::npos) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
}

TEST(CliCsv, FlagsLeftAtTheirDefaultsTakeTheFilesDimensions) {
  // zb1p: 2 ranks, 4 model stages (interleaved), 8 microbatches; the defaults
  // (train: 2 stages, 4 microbatches; bench and sim: 4 and 8) disagree.
  auto t = run_cli(kTrain + "--hint csv:" + kZb1p + " --json " + ::testing::TempDir() + "csv_train.json");
  ASSERT_EQ(t.code, 0) << t.out;
  std::ifstream in(::testing::TempDir() + "csv_train.json");
  std::string json((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(json.find("\"microbatches\": 8"), std::string::npos) << json;
  EXPECT_NE(json.find("\"model_stages\": 4"), std::string::npos) << json;
  auto b = run_cli("bench --unit-ms 0.1 --hint csv:" + kZb1p);
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("4 stages on 2 devices  8 microbatches"), std::string::npos) << b.out;
  auto s = run_cli("sim --hint csv:" + kZb1p);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("stages=4 devices=2 microbatches=8"), std::string::npos) << s.out;
  // Flags that agree are accepted.
  auto agree = run_cli("sim --hint csv:" + kZb1p + " --stages 2 --microbatches 8 --chunks 2 --split");
  EXPECT_EQ(agree.code, 0) << agree.out;
}

TEST(CliCsv, AFlagThatDisagreesWithTheFileIsAnErrorNamingBoth) {
  const std::string h = " --hint csv:" + kZb1p;
  for (const std::string& cmd : kCommands) {
    expect_clean_error(cmd + h + " --microbatches 4", "--microbatches is 4");
    expect_clean_error(cmd + h + " --microbatches 4", "8 microbatches");
    expect_clean_error(cmd + h + " --stages 4", "--stages 4 asks for 4 devices");
    expect_clean_error(cmd + h + " --stages 4", "2 ranks (devices)");
    expect_clean_error(cmd + h + " --chunks 1", "--chunks 1");
    expect_clean_error(cmd + h + " --fused", "--fused");
  }
  expect_clean_error("sim sweep --param microbatches --values 4,8 " + h, "cannot vary hint");
}

TEST(CliCsv, TrainRunsAnOverlappedVShapeFile) {
  // DualPipeV: 4 ranks, 8 model stages, 10 microbatches, overlapped F&B cells.
  auto r = run_cli(kTrain + "--layers 8 --hint csv:" + kDualpipe);
  EXPECT_EQ(r.code, 0) << r.out;
  expect_clean_error(kTrain + "--hint csv:" + kDualpipe, "8 model stages");  // 4 blocks only
}

TEST(CliCsv, NoMalformedOrMismatchedFileCrashesACommand) {
  struct Case {
    const char* name;
    std::string text;
    const char* message;
  } cases[] = {
      {"empty.csv", "", "csv"},
      {"garbage.csv", "hello,world\n", "garbage.csv:1"},
      {"binary.csv", std::string("0F0,\0\xff\xfe,0B0\n", 12), "binary.csv:1"},
      {"no_backward.csv", "0F0,0F1\n", "no backward"},
      {"duplicate.csv", "0F0,0F0,0B0\n", "duplicate task"},
      {"two_rows.csv", "0F0,0B0\n0F1,0B1\n", "appears on two rows"},
      {"huge_stage.csv", "0F0,0B0,99999F0\n", "99999"},
      {"huge_mb.csv", "0F0,0B0,0F2147483647\n", "csv"},
      {"gap_stage.csv", "0F0,0B0\n2F0,2B0\n", "stage 1 appears on no row"},
      {"w_without_i.csv", "0F0,0I0\n", "weight backward"},
      {"bad_overlap.csv", "(0F0;0B0\n", "bad_overlap.csv:1"},
      {"empty_rank.csv", "0F0,0B0\n\n1F0,1B0\n", "no tasks"},
  };
  for (const Case& c : cases) {
    const std::string path = write_csv(c.name, c.text);
    for (const std::string& cmd : kCommands) expect_clean_error(cmd + "--hint csv:" + path, c.message);
    expect_clean_error("train --executor replay --hint csv:" + path, c.message);
  }
  expect_clean_error(kTrain + "--hint csv:/nonexistent/x.csv", "cannot read schedule '/nonexistent/x.csv'");
  expect_clean_error("bench --hint csv:" + ::testing::TempDir(), "is a directory, not a file");
}

TEST(CliCsv, AnOrderThatDeadlocksIsAnErrorUnderEveryPolicy) {
  // Rank 0 waits in 0B0 for 1B0, rank 1 in 1F1 for 0F1, which rank 0 runs
  // only after 0B0; readiness-first cannot help either: each rank's cap of
  // one in-flight forward is held.
  const std::string h = "--hint csv:" + write_csv("cycle.csv", "0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  for (const char* policy : {"rrfp", "rrfp-fixed"}) {
    const std::string env = std::string("STARPU_SCHED=") + policy + " ";
    expect_clean_error("sim --policy " + std::string(policy) + " " + h, "0F1");
    auto b = run_cli("bench --unit-ms 0.1 " + h, env);
    EXPECT_EQ(b.code, 1) << b.out;
    EXPECT_NE(b.out.find("run stalled"), std::string::npos) << b.out;
    auto t = run_cli(kTrain + h, env);
    EXPECT_EQ(t.code, 1) << t.out;
    EXPECT_NE(t.out.find("run stalled"), std::string::npos) << t.out;
  }
  expect_clean_error("train --executor replay " + h, "deadlocks under strict replay");
}

TEST(CliCsv, ABackwardRankedBeforeItsForwardRunsReadinessFirstOnly) {
  const std::string h = "--hint csv:" + write_csv("backward_first.csv", "0B0,0F0\n");
  EXPECT_EQ(run_cli("sim " + h).code, 0);
  EXPECT_EQ(run_cli("bench --unit-ms 0.1 " + h).code, 0);
  EXPECT_EQ(run_cli(kTrain + h).code, 0);
  expect_clean_error("sim --policy rrfp-fixed " + h, "next in order 0B0");
  auto b = run_cli("bench --unit-ms 0.1 " + h, "STARPU_SCHED=rrfp-fixed");
  EXPECT_EQ(b.code, 1) << b.out;
  EXPECT_NE(b.out.find("next in order 0B0"), std::string::npos) << b.out;
}

}  // namespace
