// ExecOptions::cuda (devices as CUDA workers, docs/gpu.md) on whatever
// machine the suite runs on. Without a usable GPU (CI, the 2-core VM) the
// run is refused with an error that names CUDA, and the process can still
// run on CPU workers afterwards; with one, every pass runs on a CUDA worker
// and its body gets that worker's GPU and stream. CPU runs give bodies no
// GPU and no stream. The GPU run itself is checked by tests/gpu/.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/executor.hpp"
#include "runtime/session.hpp"
#include "tests/cli_run.hpp"
#include "tests/runtime_helpers.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

struct Seen {
  std::vector<int> device;
  std::vector<const void*> stream;
  explicit Seen(int n) : device(n, -2), stream(n, nullptr) {}
  TaskBody body() {
    return [this](int call, const TaskIo& io) {
      device[call] = io.cuda_device;
      stream[call] = io.stream;
      // The worker's own answer agrees with what the body was given.
      if (worker_cuda_device() != io.cuda_device || worker_cuda_stream() != io.stream)
        throw std::runtime_error("worker_cuda_device/stream disagree with the TaskIo");
    };
  }
};

}  // namespace

TEST(RuntimeCuda, CpuWorkersGiveNoGpuAndNoStream) {
  use_policy("rrfp");
  Hint h = make_hint("1f1b", {2, 4});
  Seen seen(h.graph->size());
  ExecResult r = execute(h, seen.body(), {});
  expect_valid_run(h, r, "cpu");
  for (int id = 0; id < h.graph->size(); ++id) {
    EXPECT_EQ(seen.device[id], -1) << h.graph->label(id);
    EXPECT_EQ(seen.stream[id], nullptr) << h.graph->label(id);
  }
  EXPECT_EQ(worker_cuda_stream(), nullptr);  // not a worker at all
  EXPECT_EQ(worker_cuda_device(), -1);
}

TEST(RuntimeCuda, CudaWorkersOrAClearErrorThenCpuStillRuns) {
  use_policy("rrfp");
  Hint h = make_hint("1f1b", {2, 4});
  Seen seen(h.graph->size());
  ExecOptions o;
  o.cuda = true;
  try {
    ExecResult r = execute(h, seen.body(), o);
    // A GPU is here: every pass on a CUDA worker, each device its own stream.
    expect_valid_run(h, r, "cuda");
    std::set<const void*> streams;
    for (int id = 0; id < h.graph->size(); ++id) {
      EXPECT_GE(seen.device[id], 0) << h.graph->label(id);
      EXPECT_NE(seen.stream[id], nullptr) << h.graph->label(id);
      streams.insert(seen.stream[id]);
    }
    EXPECT_EQ(static_cast<int>(streams.size()), h.devices());
  } catch (const SpecError& e) {
    const std::string m = e.what();
    std::cerr << "refused as expected without a GPU: " << m << "\n";
    EXPECT_NE(m.find("--cuda"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA"), std::string::npos) << m;
    for (int id = 0; id < h.graph->size(); ++id) EXPECT_EQ(seen.device[id], -2) << "a pass ran: " << m;
  }
  // Refused or not, the next run opens a CPU session as usual.
  ExecResult r = execute(h, sleep_body(h, 0.1), {});
  expect_valid_run(h, r, "cpu after cuda");
}

TEST(RuntimeCuda, BenchCudaRunsOrSaysWhyNot) {
  const CliResult r = run_cli("bench --cuda --hint zb-h1 --stages 2 --microbatches 4 --unit-ms 1");
  if (r.code == 0) {  // a CUDA build on a GPU machine: every message checked on the GPU
    EXPECT_NE(r.out.find("messages: "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("messages: 0 checked"), std::string::npos) << r.out;
  } else {
    EXPECT_TRUE(r.code == 1 || r.code == 2) << r.out;  // an error, not a crash
    EXPECT_NE(r.out.find("rrfp: error: --cuda"), std::string::npos) << r.out;
  }
  // Combinations not supported yet are refused by name before anything runs.
  const CliResult tp = run_cli("bench --cuda --hint 1f1b --stages 2 --tensor-parallel 2");
  EXPECT_NE(tp.code, 0);
  EXPECT_NE(tp.out.find("--cuda"), std::string::npos) << tp.out;
}

TEST(RuntimeCuda, TrainCudaRunsOrSaysWhyNot) {
  for (const char* args : {"", " --async paci --accumulate 2 --window 2", " --async amdp --accumulate 2 --window 2"}) {
    const CliResult r = run_cli(std::string("train --quiet --cuda --stages 2 --steps 2") + args);
    if (r.code != 0) {  // a CPU LibTorch, or no GPU: named, not a crash
      EXPECT_TRUE(r.code == 1 || r.code == 2) << args << ": " << r.out;
      EXPECT_NE(r.out.find("rrfp: error: --cuda"), std::string::npos) << args << ": " << r.out;
    }
  }
  for (const char* bad : {"--executor replay", "--tensor-parallel 2"}) {
    const CliResult b = run_cli(std::string("train --quiet --cuda --stages 2 --steps 1 ") + bad);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    EXPECT_NE(b.out.find("--cuda"), std::string::npos) << bad << ": " << b.out;
  }
}

// gpt-small's sizes apply unless given (here one block and 16 positions,
// so that it runs on the CPU in a second).
TEST(RuntimeCuda, GptSmallTakesItsSizesUnlessGiven) {
  const std::string json = ::testing::TempDir() + "gpt_small.json";
  const CliResult r =
      run_cli("train --quiet --model gpt-small --layers 1 --seq-len 16 --stages 1 --steps 1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(json);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["model"], "gpt-small");
  EXPECT_EQ(j["micro_batch_size"], 8);
  EXPECT_EQ(j["microbatches"], 8);
  const CliResult given = run_cli("train --quiet --model gpt-small --layers 1 --seq-len 16 --stages 1 --steps 1 "
                                  "--micro-batch-size 2 --microbatches 2 --json " + json);
  ASSERT_EQ(given.code, 0) << given.out;
  std::ifstream g(json);
  const auto k = nlohmann::json::parse(g);
  EXPECT_EQ(k["micro_batch_size"], 2);
  EXPECT_EQ(k["microbatches"], 2);
}

// Under mpirun each rank takes its share of its node's GPUs
// (mpi/mpi_session.cpp); several ranks share a GPU when there are fewer.
TEST(RuntimeCuda, RanksOfANodeSplitItsGpus) {
  const std::vector<int> four{0, 1, 2, 3};
  EXPECT_EQ(gpus_of_share(four, {0, 1}), four);
  EXPECT_EQ(gpus_of_share(four, {0, 2}), (std::vector<int>{0, 1}));
  EXPECT_EQ(gpus_of_share(four, {1, 2}), (std::vector<int>{2, 3}));
  EXPECT_EQ(gpus_of_share(four, {3, 4}), (std::vector<int>{3}));
  // Three ranks on four GPUs: every GPU taken, by exactly one rank.
  std::vector<int> taken;
  for (int r = 0; r < 3; ++r) {
    const std::vector<int> s = gpus_of_share(four, {r, 3});
    EXPECT_FALSE(s.empty()) << "rank " << r;
    taken.insert(taken.end(), s.begin(), s.end());
  }
  EXPECT_EQ(taken, four);
  // Fewer GPUs than ranks: round robin.
  EXPECT_EQ(gpus_of_share({0}, {1, 2}), (std::vector<int>{0}));
  EXPECT_EQ(gpus_of_share({0, 1}, {2, 3}), (std::vector<int>{0}));
  EXPECT_EQ(gpus_of_share({4, 7}, {1, 4}), (std::vector<int>{7}));  // device ids, not positions
  EXPECT_THROW(gpus_of_share(four, {2, 2}), SpecError);
}

// StarPU-MPI's progress thread polls without a pause (StarPU's own way)
// only where a rank has a core for it besides its workers.
TEST(RankShare, ProgressThreadPausesOnlyWithoutASpareCore) {
  EXPECT_EQ(cores_of_rank(1, 2, 2), 1);    // mpirun bound each of 2 ranks to a core
  EXPECT_EQ(cores_of_rank(2, 2, 4), 1);    // unbound, 4 ranks on 2 cores: at least one
  EXPECT_EQ(cores_of_rank(64, 64, 8), 8);  // 8 ranks on a 64-core node
  EXPECT_EQ(cores_of_rank(4, 0, 2), 4);    // the node's core count unknown: the mask
  EXPECT_GT(mpi_poll_backoff_us(1, 1), 0);
  EXPECT_GT(mpi_poll_backoff_us(2, 2), 0);
  EXPECT_EQ(mpi_poll_backoff_us(8, 1), 0);
  EXPECT_EQ(mpi_poll_backoff_us(3, 2), 0);
}
