// The BLAS LibTorch calls at run time, read off the loaded process (not the
// package list): the netlib reference is 15-20x slower on gpt-tiny, and a
// worker must run one BLAS thread or two stages on two cores fight.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli_run.hpp"
#include "train/blas.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {
namespace {

// Every mapped file of this process whose name contains `part`.
std::vector<std::string> mapped(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> out;
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash);
    if (file.find(part) != std::string::npos && (out.empty() || out.back() != file)) out.push_back(file);
  }
  return out;
}

TEST(Blas, LibTorchCallsAnOptimisedBlas) {
  auto a = torch::rand({256, 256});
  auto c = torch::mm(a, a);  // a real BLAS call through LibTorch
  ASSERT_TRUE(torch::allclose(c.sum(), (a.sum(0) * a.sum(1)).sum(), 1e-3, 1e-1));
  const BlasInfo b = blas_in_use();
  EXPECT_TRUE(b.optimised()) << "LibTorch calls " << b.describe();
  // sgemm_ comes from a file this process really mapped.
  bool seen = false;
  for (const std::string& f : mapped("lib"))
    seen = seen || std::filesystem::equivalent(f, b.library);
  EXPECT_TRUE(seen) << b.library << " is not mapped";
  // And not from the reference build that Debian keeps in blas/.
  EXPECT_EQ(b.library.find("/blas/libblas.so"), std::string::npos) << b.describe();
}

TEST(Blas, AWorkerRunsOneIntraOpAndOneBlasThread) {
  int torch_threads = -1, blas_threads = -2;
  std::thread worker([&] {
    one_intra_op_thread();
    torch_threads = torch::get_num_threads();
    auto a = torch::rand({512, 512});
    (void)torch::mm(a, a);
    blas_threads = blas_in_use().threads;
  });
  worker.join();
  EXPECT_EQ(torch_threads, 1);
  if (blas_in_use().kind == "OpenBLAS") {
    EXPECT_EQ(blas_threads, 1);
  }
}

TEST(Blas, TrainNamesTheBlasInItsFirstLine) {
  auto r = run_cli("train --steps 1 --d-model 16 --heads 2 --seq-len 8 --micro-batch-size 1");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first.rfind("blas: ", 0), 0u) << first;
  EXPECT_EQ(r.out.find("not an optimised BLAS"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace rrfp::train
