// Which ranks hold a bidirectional hint's stage copies under mpirun, and
// the hops of their mirror reduction (train/mpi_train.hpp). The reduction
// itself runs under a real mpirun (tests/mpi: losses bitwise equal to one
// process for Chimera on 2 and 4 ranks).
#include <gtest/gtest.h>

#include "hints/generators.hpp"
#include "train/mpi_train.hpp"

namespace rrfp::train {
namespace {

Hint chimera(int D, int M) {
  HintParams p;
  p.stages = D;
  p.microbatches = M;
  return make_hint("chimera", p);
}

Hint one_f_one_b(int S, int M) {
  HintParams p;
  p.stages = S;
  p.microbatches = M;
  return make_hint("1f1b", p);
}

TEST(MirrorPlan, DeterministicHopsFollowMicrobatchOrder) {
  // 4 devices, one per rank: stage 0 is on device 0 going down (microbatches
  // 0-3) and on device 3 going up (4-7).
  const Hint h = chimera(4, 8);
  const MpiTrainPlan p = mpi_train_plan(h, 1, 1, 0, true);
  ASSERT_EQ(p.mirror[0].size(), 2u);
  EXPECT_EQ(p.mirror[0][0].rank, 0);
  EXPECT_EQ(p.mirror[0][0].first_mb, 0);
  EXPECT_EQ(p.mirror[0][1].rank, 3);
  EXPECT_EQ(p.mirror[0][1].first_mb, 4);
  EXPECT_EQ(p.holders[1], (std::vector<int>{1, 2}));
  EXPECT_EQ(p.mirror[1][1].rank, 2);
  EXPECT_TRUE(p.local[0] && p.local[3] && !p.local[1] && !p.local[2]);
  EXPECT_EQ(p.holders[3], (std::vector<int>{0, 3}));  // the last stage's copies: devices 3 and 0
  // Rank 0 runs half of stage 0's and of stage 3's microbatches, none of the others'.
  EXPECT_EQ(p.local_microbatches, (std::vector<int>{4, 0, 0, 4}));
  EXPECT_TRUE(p.any_mirrored());
}

TEST(MirrorPlan, NonDeterministicVisitsEachHolderOnce) {
  const MpiTrainPlan p = mpi_train_plan(chimera(4, 8), 1, 1, 2, false);
  for (int s = 0; s < 4; ++s) {
    ASSERT_EQ(p.mirror[s].size(), 2u) << s;
    EXPECT_EQ(p.mirror[s][0].rank, p.holders[s][0]);
    EXPECT_EQ(p.mirror[s][1].rank, p.holders[s][1]);
  }
}

TEST(MirrorPlan, CopiesOnOneRankNeedNoReduction) {
  // 2 devices on one rank: both copies of every stage are local.
  const MpiTrainPlan one = mpi_train_plan(chimera(2, 4), 1, 2, 0, true);
  for (const auto& hops : one.mirror) EXPECT_TRUE(hops.empty());
  EXPECT_EQ(one.holders[1], (std::vector<int>{0}));  // the last stage's losses on one rank
  // 4 devices on 2 ranks: device 0 and 3 are on ranks 0 and 1.
  const MpiTrainPlan two = mpi_train_plan(chimera(4, 4), 1, 2, 1, true);
  EXPECT_EQ(two.holders[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(two.mirror[0].size(), 2u);
}

TEST(MirrorPlan, OnePipelineIsUnchanged) {
  const MpiTrainPlan p = mpi_train_plan(one_f_one_b(4, 8), 1, 1, 3, true);
  for (const auto& hops : p.mirror) EXPECT_TRUE(hops.empty());
  EXPECT_FALSE(p.any_mirrored());
  EXPECT_EQ(p.local_microbatches, (std::vector<int>{0, 0, 0, 8}));
  EXPECT_EQ(p.holders[3], (std::vector<int>{3}));
  EXPECT_TRUE(p.local[3] && !p.local[0]);
}

TEST(MirrorPlan, EachTensorParallelMemberIsReducedWithItsOwnCopies) {
  // Chimera on 2 devices x 2 members, a member per rank: member t of device
  // d is on rank 2d + t. Stage 0's copies are devices 0 and 1, so member 0
  // is reduced between ranks 0 and 2, member 1 between ranks 1 and 3.
  const MpiTrainPlan p = mpi_train_plan(chimera(2, 4), 2, 1, 3, true);
  ASSERT_EQ(p.members, 2);
  ASSERT_EQ(p.mirror.size(), 4u);
  EXPECT_EQ(p.holders[p.at(0, 0)], (std::vector<int>{0, 2}));
  EXPECT_EQ(p.holders[p.at(0, 1)], (std::vector<int>{1, 3}));
  ASSERT_EQ(p.mirror[p.at(0, 1)].size(), 2u);
  EXPECT_EQ(p.mirror[p.at(0, 1)][0].rank, 1);  // microbatches 0-1 go down: stage 0 on device 0
  EXPECT_EQ(p.mirror[p.at(0, 1)][1].rank, 3);
  EXPECT_EQ(p.mirror[p.at(0, 1)][1].first_mb, 2);
  EXPECT_TRUE(p.local[p.at(0, 1)] && p.local[p.at(1, 1)] && !p.local[p.at(0, 0)] && !p.local[p.at(1, 0)]);
  EXPECT_TRUE(p.mirrored(0) && p.mirrored(1));
  // Both members of a device on one rank: each member still has its own
  // reduction, between the same two ranks.
  const MpiTrainPlan two = mpi_train_plan(chimera(2, 4), 2, 2, 0, true);
  EXPECT_EQ(two.holders[two.at(1, 0)], (std::vector<int>{0, 1}));
  EXPECT_EQ(two.holders[two.at(1, 1)], (std::vector<int>{0, 1}));
  EXPECT_TRUE(two.local[two.at(1, 0)] && two.local[two.at(1, 1)]);
}

TEST(MirrorPlan, TensorParallelOnePipelineNeedsNoReduction) {
  const MpiTrainPlan p = mpi_train_plan(one_f_one_b(2, 4), 2, 1, 1, true);
  for (const auto& hops : p.mirror) EXPECT_TRUE(hops.empty());
  EXPECT_EQ(p.holders[p.at(0, 1)], (std::vector<int>{1}));
  EXPECT_EQ(p.holders[p.at(1, 0)], (std::vector<int>{2}));
  EXPECT_TRUE(p.local[p.at(0, 1)] && !p.local[p.at(0, 0)] && !p.mirrored(0));
}

}  // namespace
}  // namespace rrfp::train
