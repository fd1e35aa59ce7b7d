#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace {
std::string tmp(const std::string& n) { return ::testing::TempDir() + n; }
}  // namespace

TEST(CliSim, JsonCarriesTheBenchFields) {
  auto r = run_cli("sim --hint bfw --stages 4 --microbatches 8 --variability lognormal:0.6 --seed 3 --json " +
                   tmp("s.json") + " --png " + tmp("s.png"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j;
  std::ifstream(tmp("s.json")) >> j;
  for (const char* k : {"policy", "hint", "stages", "devices", "microbatches", "seed", "variability", "tasks",
                        "makespan_s", "lower_bound_s", "makespan_over_lb", "bubble_ratio", "busy_s", "peak_inflight",
                        "inflight_cap", "peak_activation_bytes", "weight_bytes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["tasks"], 4 * 8 * 3);
  EXPECT_GE(j["makespan_over_lb"].get<double>(), 1.0);
}

// As `rrfp bench`: STARPU_SCHED and RRFP_INFLIGHT_SLACK apply unless the
// flags say otherwise; a StarPU policy the simulator cannot model is named.
TEST(CliSim, PolicyAndSlackComeFromTheEnvironmentAsInBench) {
  const std::string args = "sim --hint 1f1b --stages 4 --microbatches 8 --json " + tmp("env.json");
  auto read = [&] {
    nlohmann::json j;
    std::ifstream(tmp("env.json")) >> j;
    return j;
  };
  ASSERT_EQ(run_cli(args, "STARPU_SCHED=rrfp-fixed RRFP_INFLIGHT_SLACK=2").code, 0);
  nlohmann::json j = read();
  EXPECT_EQ(j["policy"], "rrfp-fixed");
  EXPECT_EQ(j["inflight_cap"], nlohmann::json({6, 5, 4, 3}));
  ASSERT_EQ(run_cli(args + " --policy rrfp --inflight-slack 0", "STARPU_SCHED=rrfp-fixed RRFP_INFLIGHT_SLACK=2").code, 0);
  j = read();
  EXPECT_EQ(j["policy"], "rrfp");
  EXPECT_EQ(j["inflight_cap"], nlohmann::json({4, 3, 2, 1}));
  auto e = run_cli(args, "STARPU_SCHED=eager");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("STARPU_SCHED=eager is not simulated"), std::string::npos) << e.out;
  EXPECT_EQ(read()["policy"], "rrfp-wait");
}

// The lower bound counts each message's least time: latency and wire time.
TEST(CliSim, TheLowerBoundCountsLinkLatencyAndWireTime) {
  for (const char* link : {"--latency-ms 5", "--message-mb 1 --bandwidth-gbps 1.6"}) {  // 1 MB at 1.6 Gbit/s: 5 ms
    auto r = run_cli(std::string("sim --hint 1f1b --stages 4 --microbatches 4 --unit-ms 1 ") + link + " --json " +
                     tmp("lb.json"));
    ASSERT_EQ(r.code, 0) << r.out;
    nlohmann::json j;
    std::ifstream(tmp("lb.json")) >> j;
    // A microbatch goes down 3 links and back up 3: 30 ms of messages on its critical path.
    EXPECT_GE(j["lower_bound_s"].get<double>(), 0.030) << link;
    EXPECT_GE(j["makespan_over_lb"].get<double>(), 1.0) << link;
  }
}

// --update-ms charges each stage's update after its last backward, as
// `sim async` charges a flushed step: 1F1B's last backward is stage 0's,
// so the step grows by one update; Chimera's replicated stages update on
// both holders, after their reduction.
TEST(CliSim, UpdateMsChargesTheStepsUpdates) {
  auto read = [](const std::string& args) {
    auto r = run_cli(args + " --json " + tmp("u.json"));
    EXPECT_EQ(r.code, 0) << r.out;
    nlohmann::json j;
    std::ifstream(tmp("u.json")) >> j;
    return j;
  };
  auto makespan = [&](const std::string& args) {
    return read("sim --unit-ms 1 --stages 4 --microbatches 8 " + args)["makespan_s"].get<double>();
  };
  for (const char* h : {"--hint 1f1b --fused", "--hint zb-h1", "--hint chimera"}) {
    const double plain = makespan(h), charged = makespan(std::string(h) + " --update-ms 0.5");
    EXPECT_GE(charged, plain + 0.5e-3 - 1e-12) << h;
    EXPECT_LE(charged, plain + 1.0e-3 + 1e-12) << h << ": more than one update on the critical path's end";
  }
  // The same step `sim async` charges its flushed 1F1B with.
  const nlohmann::json sync = read("sim --unit-ms 1 --stages 4 --microbatches 8 --hint 1f1b --update-ms 0.5");
  EXPECT_DOUBLE_EQ(sync["update_s"].get<double>(), 0.5e-3);
  const nlohmann::json as =
      read("sim async --unit-ms 1 --stages 4 --accumulate 8 --window 2 --update-ms 0.5 --policy rrfp-wait");
  EXPECT_DOUBLE_EQ(as["sync_step_s"].get<double>(), sync["makespan_s"].get<double>());
  auto bad = run_cli("sim --hint 1f1b --stages 4 --microbatches 8 --update-ms -1");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--update-ms -1 must be a finite number >= 0"), std::string::npos) << bad.out;
}

// sim async's replicas reduce --weight-mb per stage over the link every
// step; the JSON says what the link and the reduction were.
TEST(CliSim, AsyncReplicasReduceTheirWeightsOverTheLink) {
  auto step = [](const std::string& mb) {
    const std::string out = tmp("ar.json");
    auto r = run_cli("sim async --stages 4 --accumulate 4 --window 4 --data-parallel 2 --bandwidth-gbps 0.8 "
                     "--weight-mb " + mb + " --json " + out);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("data_parallel=2 devices=8"), std::string::npos) << r.out;
    nlohmann::json j;
    std::ifstream(out) >> j;
    EXPECT_EQ(j["data_parallel"], 2);
    EXPECT_DOUBLE_EQ(j["link"]["weight_bytes"].get<double>(), std::stod(mb) * 1e6);
    EXPECT_DOUBLE_EQ(j["link"]["bandwidth_Bps"].get<double>(), 1e8);
    return j["async_step_s"].get<double>();
  };
  EXPECT_GT(step("1"), step("0") + 0.005) << "10 ms a step's reduction, partly overlapped";
}

TEST(CliSim, FlagsBeforeASubcommandAreRefusedNotDropped) {
  // `sim --update-ms 0.2 async` used to run async without the update.
  for (const char* sub : {"async", "sweep --values 0,0.3", "compare"}) {
    auto r = run_cli(std::string("sim --update-ms 0.2 ") + sub);
    EXPECT_NE(r.code, 0) << sub << ": " << r.out;
    const std::string name = std::string(sub).substr(0, std::string(sub).find(' '));
    EXPECT_NE(r.out.find("--update-ms was given before '" + name + "'"), std::string::npos) << r.out;
  }
  EXPECT_EQ(run_cli("sim async --update-ms 0.2").code, 0);
}

TEST(CliSim, CompareAndSweepRun) {
  auto c = run_cli("sim compare --stages 4 --microbatches 8 --latency-ms 0.5");
  ASSERT_EQ(c.code, 0) << c.out;
  for (const char* h : {"gpipe", "chimera", "hanayo", "dualpipev", "zbv"}) EXPECT_NE(c.out.find(h), std::string::npos);
  auto s = run_cli("sim sweep --hint bfw --stages 4 --microbatches 8 --values 0,0.6 --seeds 2 --svg " + tmp("w.svg"));
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("0.6"), std::string::npos);
}

TEST(CliSim, BadInputGetsAClearError) {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"sim --hint 1f1b --stages 4 --microbatches 8 --bandwidth-gbps 0 --message-mb 4", "bandwidth"},
      {"sim --hint 1f1b --stages 4 --microbatches 8 --cost F=-1", "negative"},
      {"sim --hint chimera --stages 4 --microbatches 7", "even number of microbatches"},
      {"sim --hint chimera --stages 3 --microbatches 8", "even number of devices"},
      {"sim --hint 1f1b --stages 0 --microbatches 8", "stages"},
      {"sim --hint nosuch --stages 4 --microbatches 8", "unknown hint"},
      {"sim --hint 1f1b --policy best", "unknown arbitration mode"},
      {"sim sweep --hint bfw --param colour --values 1", "unknown sweep parameter"},
      {"sim sweep --hint bfw --param sigma --values 6abc", "'6abc' is not a number"},
      {"sim sweep --hint bfw --param stages --values 3e9", "is not a count"},
      {"sim sweep --hint bfw --param microbatches --values 7.9", "is not a count"},
  };
  for (const Case& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
  // A sweep over an order that cannot run fails as `rrfp sim` does, instead
  // of printing a ratio of 1.
  std::ofstream(tmp("cycle.csv")) << "0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n";
  auto sw = run_cli("sim sweep --hint csv:" + tmp("cycle.csv") + " --param sigma --values 0,0.5 --seeds 2");
  EXPECT_EQ(sw.code, 2) << sw.out;
  EXPECT_NE(sw.out.find("the run stalls under"), std::string::npos) << sw.out;
  // A trace naming microbatch 999999 and nothing else: refused before its
  // tables are sized (it used to allocate gigabytes first).
  std::ofstream(tmp("holes.json")) << R"({"traceEvents":[{"ph":"M","name":"process_name","args":{"name":)"
                                   << R"("rrfp train gpt-tiny 1f1b S=2 M=4"}},{"ph":"X","name":"0F999999","ts":0,"dur":5,"tid":1},)"
                                   << R"({"ph":"M","name":"thread_name","tid":1}]})";
  auto holes = run_cli("sim --durations " + tmp("holes.json"));
  EXPECT_EQ(holes.code, 2) << holes.out;
  EXPECT_NE(holes.out.find("passes are missing"), std::string::npos) << holes.out;
}

// Trace-driven workloads from the command line: the recorded mm-tiny trace
// of perf/traces replayed at 8 stages by sim and its sweeps, bad traces
// refused with the file and the problem named.
TEST(CliSim, DurationsFromATrainingTrace) {
  const std::string trace = std::string(RRFP_SOURCE_DIR) + "/perf/traces/mm-tiny_1f1b.json";
  auto r = run_cli("sim --durations " + trace + " --hint 1f1b --stages 8 --microbatches 16 --link-ms 0.5 --json " +
                   tmp("d.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j;
  std::ifstream(tmp("d.json")) >> j;
  EXPECT_EQ(j["variability"], "durations:" + trace);
  EXPECT_EQ(j["policy"], "rrfp-wait");
  EXPECT_GE(j["makespan_over_lb"].get<double>(), 1.0);
  auto s = run_cli("sim sweep --durations " + trace + " --hint 1f1b --microbatches 32 --param stages --values 4,8 --seeds 1");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("rrfp-fixed/rrfp-wait"), std::string::npos) << s.out;
  std::ofstream(tmp("not_a_trace.json")) << "[1, 2";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"sim --durations " + tmp("nosuch.json") + " --hint 1f1b --stages 4", "nosuch.json"},
      {"sim --durations " + tmp("not_a_trace.json") + " --hint 1f1b --stages 4", "not_a_trace.json"},
      {"sim --durations " + trace + " --hint zb-h1 --stages 4", "use a hint with the trace's backward form"},
      {"sim --durations " + trace + " --hint 1f1b --stages 1", "it has 2 stages and the pipeline 1"},
      {"sim --durations " + trace + " --durations-model gpt-tiny --hint 1f1b --stages 4", "not 'gpt-tiny'"},
      {"sim --durations " + trace + " --variability lognormal:0.3 --hint 1f1b --stages 4", "drop --variability"},
      {"sim async --durations " + std::string(RRFP_SOURCE_DIR) + "/perf/traces/mm-tiny_zb-h1.json --stages 2",
       "runs fused backwards; the --durations trace holds split ones"},
      {"sim --durations " + tmp("not_a_trace.json") + " --hint 1f1b --stages 4", "parse error at line 1"},
  };
  for (const Case& c : cases) {
    auto e = run_cli(c.args);
    EXPECT_NE(e.code, 0) << c.args;
    EXPECT_NE(e.out.find(c.message), std::string::npos) << c.args << "\n" << e.out;
    EXPECT_EQ(e.out.find("[json.exception"), std::string::npos) << "the library's tag: " << e.out;
  }
}

// A dualpipev run records fused and split backwards; its trace replays in
// bench (2 devices, its own stages) and sim (resampled to 4 devices).
TEST(CliSim, DurationsFromADualpipevTrace) {
  auto t = run_cli("train --hint dualpipev --stages 2 --microbatches 4 --steps 2 --quiet --trace " + tmp("dpv.json"));
  ASSERT_EQ(t.code, 0) << t.out;
  auto b = run_cli("bench --hint dualpipev --stages 2 --microbatches 4 --durations " + tmp("dpv.json"));
  EXPECT_EQ(b.code, 0) << b.out;
  auto s = run_cli("sim --hint dualpipev --stages 4 --microbatches 16 --durations " + tmp("dpv.json"));
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("makespan"), std::string::npos) << s.out;
}

// --mirror-reduce after-graph: Chimera's copies reduce their gradients
// after the graph, so over a slow link the step is longer than beside it.
TEST(CliSim, MirrorReductionAfterTheGraph) {
  const std::string args = "sim --hint chimera --stages 4 --microbatches 8 --weight-mb 50 --bandwidth-gbps 10";
  double makespan[2];
  for (int after : {0, 1}) {
    const std::string out = tmp("mirror" + std::to_string(after) + ".json");
    auto r = run_cli(args + " --mirror-reduce " + (after ? "after-graph" : "overlap") + " --json " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    nlohmann::json j;
    std::ifstream(out) >> j;
    EXPECT_EQ(j["mirror_reduce"], after ? "after-graph" : "overlap");
    makespan[after] = j["makespan_s"].get<double>();
  }
  // 50 MB at 10 Gbit/s is 40 ms an exchange; after the graph two run one
  // after another on each device.
  EXPECT_GT(makespan[1], makespan[0] + 0.02);
  auto bad = run_cli(args + " --mirror-reduce sometimes");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--mirror-reduce 'sometimes': overlap or after-graph"), std::string::npos) << bad.out;
}
