// rrfp topo: hwloc's machine and where StarPU's workers really run.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli_run.hpp"

namespace {

nlohmann::json topo(const std::string& env, int devices) {
  // One file per test: CTest runs them in parallel.
  const std::string path = testing::TempDir() + "topo_" + testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  const CliResult r = run_cli("topo --devices " + std::to_string(devices) + " --json " + path, env);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("StarPU workers"), std::string::npos) << r.out;
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

TEST(CliTopo, MachineAndWorkers) {
  const nlohmann::json j = topo("", 3);
  EXPECT_GE(j["cores"].get<int>(), 1);
  EXPECT_GE(j["pus"].get<int>(), j["cores"].get<int>());
  ASSERT_GE(j["numa"].size(), 1u);
  ASSERT_EQ(j["workers"].size(), 3u);  // one per device asked for
  for (const auto& w : j["workers"]) {
    EXPECT_EQ(w["type"], "CPU");
    EXPECT_FALSE(w["runs_on"].get<std::string>().empty());
  }
}

// With binding on, each worker thread is confined to the one PU StarPU
// chose for it: measured from inside the worker, not taken from StarPU.
TEST(CliTopo, BoundWorkersRunOnTheirPu) {
  const nlohmann::json j = topo("STARPU_WORKERS_NOBIND=0", 2);
  for (const auto& w : j["workers"])
    EXPECT_EQ(w["runs_on"].get<std::string>(), std::to_string(w["bindid"].get<int>())) << w.dump();
}

// 64 workers on however few cores start in a second or two: idle workers
// poll the rrfp policies, and used to yield holding their sched mutex, so
// StarPU's start-up (which locks each worker in turn) took minutes here.
TEST(CliTopo, SixtyFourWorkersStartWithoutStarvingTheSubmitter) {
  const CliResult r = run_cli("topo --devices 64", "STARPU_SCHED=rrfp-wait timeout 60");
  EXPECT_EQ(r.code, 0) << "exit " << r.code << " (124: still starting after 60 s)\n" << r.out;
}

TEST(CliTopo, TooManyDevicesIsAClearError) {
  const CliResult r = run_cli("topo --devices 100000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("at most"), std::string::npos) << r.out;
}

}  // namespace
