// The `rrfp hints` command run as a user would: exit codes and output.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "hints/generators.hpp"

namespace {
using CliRun = CliResult;
CliRun run(const std::string& args) { return run_cli(args); }

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "rrfp_cli_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

bool has(const CliRun& r, const std::string& s) { return r.out.find(s) != std::string::npos; }

const std::string kRef = RRFP_REFERENCE_DIR;
}  // namespace

TEST(CliHints, ListNamesEveryHint) {
  CliRun r = run("hints list");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const rrfp::HintInfo& h : rrfp::hint_registry()) EXPECT_TRUE(has(r, h.name)) << h.name;
  EXPECT_TRUE(has(r, "bfw"));
  EXPECT_TRUE(has(r, "csv:PATH"));
}

TEST(CliHints, ShowJson) {
  CliRun r = run("hints show --hint 1f1b --stages 4 --microbatches 8 --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hint"], "1f1b");
  EXPECT_EQ(j["stages"], 4);
  EXPECT_EQ(j["devices"], 4);
  EXPECT_EQ(j["microbatches"], 8);
  EXPECT_EQ(j["split_backward"], false);
  EXPECT_EQ(j["makespan"], 33.0);
  EXPECT_NEAR(j["bubble_ratio"].get<double>(), 3.0 / 11.0, 1e-9);
  EXPECT_EQ(j["peak_inflight"], (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(j["placement"], (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(j["order"].size(), 4u);
  EXPECT_EQ(j["order"][3][0], "3F0");
  EXPECT_EQ(j["order"][3][1], "3B0");

  CliRun z = run("hints show --hint interleaved-1f1b --stages 2 --microbatches 4 --chunks 2 --split --format json");
  ASSERT_EQ(z.code, 0) << z.out;
  auto k = nlohmann::json::parse(z.out);
  EXPECT_EQ(k["stages"], 4);
  EXPECT_EQ(k["devices"], 2);
  EXPECT_EQ(k["split_backward"], true);
  EXPECT_EQ(k["placement"], (std::vector<int>{0, 1, 0, 1}));
}

TEST(CliHints, ShowTable) {
  CliRun r = run("hints show --hint zb-h1 --stages 4 --microbatches 8");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "makespan 27 ")) << r.out;
  EXPECT_TRUE(has(r, "dev0=4 dev1=3 dev2=2 dev3=1")) << r.out;
  EXPECT_TRUE(has(r, "  dev3   .   .   . 3F0 3I0")) << r.out;
}

TEST(CliHints, ExportThenValidate) {
  CliRun e = run("hints export --hint zbv --stages 3 --microbatches 6");
  ASSERT_EQ(e.code, 0) << e.out;
  CliRun c = run("hints show --hint zbv --stages 3 --microbatches 6 --format csv");
  EXPECT_EQ(c.out, e.out);
  std::string path = temp_file("zbv.csv", e.out);
  CliRun v = run("hints validate " + path);
  ASSERT_EQ(v.code, 0) << v.out;
  EXPECT_TRUE(has(v, "ranks: 3")) << v.out;
  EXPECT_TRUE(has(v, "stages: 6")) << v.out;
  EXPECT_TRUE(has(v, "placement: vshape")) << v.out;
  EXPECT_TRUE(has(v, "backward: split")) << v.out;
  EXPECT_TRUE(has(v, "makespan: 38 ")) << v.out;  // 6M + S - 1
  // And the file is accepted wherever a hint name is.
  CliRun s = run("hints export --hint csv:" + path);
  EXPECT_EQ(s.code, 0);
  EXPECT_EQ(s.out, e.out);
}

TEST(CliHints, ValidateReferences) {
  CliRun d = run("hints validate " + kRef + "/dualpipev_4rank_10mb.csv");
  ASSERT_EQ(d.code, 0) << d.out;
  EXPECT_TRUE(has(d, "ranks: 4"));
  EXPECT_TRUE(has(d, "stages: 8"));
  EXPECT_TRUE(has(d, "placement: vshape (stage -> rank: 0 1 2 3 3 2 1 0)")) << d.out;
  EXPECT_TRUE(has(d, "microbatches: 10"));
  EXPECT_TRUE(has(d, "backward: mixed"));
  CliRun z = run("hints validate " + kRef + "/zb1p_2rank_2stagep_compute.csv");
  ASSERT_EQ(z.code, 0) << z.out;
  EXPECT_TRUE(has(z, "placement: interleaved (stage -> rank: 0 1 0 1)")) << z.out;
  EXPECT_TRUE(has(z, "backward: split"));
}

// The steady state of an asynchronous window (docs/async.md): the order
// run with its update rules, no flush between steps.
TEST(CliHints, ShowAsyncWindows) {
  CliRun a = run("hints show --async amdp --directions 4 --stages 4 --accumulate 8 --window 3 --format json");
  ASSERT_EQ(a.code, 0) << a.out;
  auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["hint"], "amdp-4");
  EXPECT_EQ(j["microbatches"], 24);
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["placements"].size(), 4u);
  EXPECT_EQ(j["async"]["directions"], 4);
  CliRun p = run("hints show --async paci --stages 3 --accumulate 2 --window 3");
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_TRUE(has(p, "hint paci: 3 stages")) << p.out;
  EXPECT_TRUE(has(p, "bubble ratio 0.2500")) << p.out;  // 1F1B of 6 microbatches: one flush per window
  // With replicas: a copy of the window per replica, the same bubble.
  CliRun d = run("hints show --async paci --stages 3 --accumulate 2 --window 3 --data-parallel 2 --format json");
  ASSERT_EQ(d.code, 0) << d.out;
  j = nlohmann::json::parse(d.out);
  EXPECT_EQ(j["hint"], "paci-dp2");
  EXPECT_EQ(j["devices"], 6);
  EXPECT_EQ(j["microbatches"], 12);
  EXPECT_EQ(j["complete"], true);
  EXPECT_DOUBLE_EQ(j["bubble_ratio"].get<double>(), 0.25);
  EXPECT_EQ(j["async"]["data_parallel"], 2);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"hints show", "--hint is required"},
      {"hints show --async amdp --hint 1f1b", "drop --hint"},
      {"hints show --async pipedream", "unknown --async"},
      {"hints show --async amdp --stages 3", "divisible by 2"},
      {"hints show --async paci --window 0", "at least 1"},
      {"hints show --async amdp --data-parallel 2", "drop --data-parallel"},
      {"hints show --async paci --data-parallel 0", "at least 1 replica"},
  };
  for (const auto& [args, expect] : bad) {
    CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r, expect)) << args << "\n" << r.out;
  }
}

TEST(CliHints, ErrorsExitTwoWithAMessage) {
  struct Case {
    std::string args, expect;
  };
  std::string dead = temp_file("dead.csv", "0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  std::string junk = temp_file("junk.csv", std::string("\x7f" "ELF\x02\x01\x01\x00\x00,,\n\xff\xfe", 14));
  std::string empty = temp_file("empty.csv", "");
  const std::vector<Case> cases = {
      {"hints show --hint zb-h1 --fused", "split"},
      {"hints show --hint interleaved-1f1b --stages 4 --microbatches 6 --chunks 2", "multiple"},
      {"hints show --hint interleaved-1f1b --stages 4 --microbatches 8", "--chunks"},
      {"hints show --hint 1f1b --stages 0", "--stages"},
      {"hints show --hint 1f1b --microbatches -2", "--microbatches"},
      {"hints show --hint nope", "unknown hint"},
      {"hints export --hint zbv --chunks 3", "2 chunks"},
      {"hints validate " + dead, "device 1 stuck at 1F1"},
      {"hints validate " + junk, "bad cell"},
      {"hints validate " + empty, "empty"},
      {"hints validate /nonexistent/file.csv", "cannot read schedule '/nonexistent/file.csv': No such file or directory"},
      {"hints show --hint csv:" + dead, "ERROR HERE"},
  };
  for (const Case& c : cases) {
    CliRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r, "rrfp: error: ")) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r, c.expect)) << c.args << "\n" << r.out;
  }
  // Option errors are CLI11's: non-zero as well.
  EXPECT_NE(run("hints show --hint 1f1b --split --fused").code, 0);
  EXPECT_NE(run("hints show --hint 1f1b --format xml").code, 0);
}

TEST(CliHints, DataParallelReplicasShowOnTheirOwnDevices) {
  CliRun r = run("hints show --hint 1f1b --stages 2 --microbatches 2 --data-parallel 2 --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hint"], "1f1b-dp2");
  EXPECT_EQ(j["devices"], 4);
  EXPECT_EQ(j["microbatches"], 4);
  EXPECT_EQ(j["placements"], (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(j["order"][2][0], "0F2");  // replica 1's first device starts with its first microbatch
  EXPECT_EQ(j["makespan"], 9.0);       // as one replica (BW = 2 units): they never wait for each other
  // No PyTorch CSV names a stage's copy: the refusal says what to export.
  CliRun e = run("hints export --hint 1f1b --stages 2 --microbatches 2 --data-parallel 2");
  EXPECT_EQ(e.code, 2);
  EXPECT_TRUE(has(e, "export one replica's hint, without --data-parallel")) << e.out;
  CliRun s = run("sim sweep --hint 1f1b --stages 2 --data-parallel 2 --param sigma --values 0,0.2 --seeds 1");
  EXPECT_EQ(s.code, 2);
  EXPECT_TRUE(has(s, "sim sweep does not replicate its hint: drop --data-parallel")) << s.out;
  CliRun z = run("sim --hint 1f1b --stages 2 --data-parallel 0");
  EXPECT_EQ(z.code, 2);
  EXPECT_TRUE(has(z, "--data-parallel must be at least 1 replica, got 0")) << z.out;
}
