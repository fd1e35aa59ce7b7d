// The activation counters of train/memory.hpp, which the CPU allocator and,
// on a GPU, the CUDA caching allocator's trace hook both charge.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "train/memory.hpp"

using namespace rrfp::train;

TEST(TrainMemory, ChargesOnlyUnderAScopeAndCreditsFromAnyThread) {
  auto c = std::make_shared<MemCounter>();
  int a = 0, b = 0;
  EXPECT_FALSE(charge_this_thread(&a, 100));  // no scope: not charged
  {
    ChargeScope scope(c);
    EXPECT_TRUE(charge_this_thread(&a, 100));
    EXPECT_TRUE(charge_this_thread(&b, 28));
  }
  EXPECT_EQ(c->live.load(), 128);
  std::thread([&] { credit_charge(&a); }).join();  // freed elsewhere
  EXPECT_EQ(c->live.load(), 28);
  credit_charge(&a);  // twice, or never charged: ignored
  credit_charge(&c);
  EXPECT_EQ(c->live.load(), 28);
  credit_charge(&b);
  EXPECT_EQ(c->live.load(), 0);
}

TEST(TrainMemory, CpuTensorsMadeUnderAScopeCountUntilFreed) {
  install_memory_accounting();
  auto c = std::make_shared<MemCounter>();
  torch::Tensor kept;
  {
    ChargeScope scope(c);
    kept = torch::ones({1024});  // 4 KiB kept
    torch::Tensor tmp = torch::ones({256});
  }
  EXPECT_EQ(c->live.load(), 4096);
  torch::Tensor outside = torch::ones({512});  // not charged
  EXPECT_EQ(c->live.load(), 4096);
  kept.reset();
  EXPECT_EQ(c->live.load(), 0);
}
