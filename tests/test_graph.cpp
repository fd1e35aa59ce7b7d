#include <gtest/gtest.h>

#include <set>

#include "graph/task_graph.hpp"

using namespace rrfp;

TEST(Graph, CountsAndEdgesFused) {
  TaskGraph g(PipelineSpec::linear(4, 8, false));
  EXPECT_EQ(g.size(), 4 * 8 * 2);
  // F(s,m) <- F(s-1,m): 3*8; BW(s,m) <- F(s,m): 32; BW(s,m) <- BW(s+1,m): 3*8.
  EXPECT_EQ(g.edge_count(), 24 + 32 + 24);
  int bw = g.find(Kind::BW, 1, 3);
  std::set<int> preds(g.preds(bw).begin(), g.preds(bw).end());
  EXPECT_EQ(preds, (std::set<int>{g.find(Kind::F, 1, 3), g.find(Kind::BW, 2, 3)}));
  EXPECT_EQ(g.find(Kind::B, 1, 3), -1);
  EXPECT_EQ(g.label(bw), "1B3");
}

TEST(Graph, CountsAndEdgesSplit) {
  TaskGraph g(PipelineSpec::linear(3, 5, true));
  EXPECT_EQ(g.size(), 3 * 5 * 3);
  int w = g.find(Kind::W, 2, 4);
  ASSERT_EQ(g.preds(w).size(), 1);
  EXPECT_EQ(*g.preds(w).begin(), g.find(Kind::B, 2, 4));
  int blast = g.find(Kind::B, 2, 0);
  ASSERT_EQ(g.preds(blast).size(), 1);  // last stage: only its own forward
  EXPECT_EQ(g.label(blast), "2I0");
  EXPECT_EQ(static_cast<int>(g.topological_order().size()), g.size());
}

TEST(Graph, TopologicalOrderRespectsEveryEdge) {
  TaskGraph g(PipelineSpec::interleaved(2, 3, 4, true));
  auto order = g.topological_order();
  std::vector<int> pos(g.size());
  for (int i = 0; i < g.size(); ++i) pos[order[i]] = i;
  for (int id = 0; id < g.size(); ++id)
    for (int p : g.preds(id)) EXPECT_LT(pos[p], pos[id]);
}

TEST(Graph, Placements) {
  auto il = PipelineSpec::interleaved(2, 2, 4, false);
  EXPECT_EQ(il.stages, 4);
  EXPECT_EQ(il.device_of(3, 0), 1);
  auto v = PipelineSpec::vshape(4, 4, true);
  EXPECT_EQ(v.stages, 8);
  EXPECT_EQ(v.device_of(7, 0), 0);
  EXPECT_EQ(v.device_of(4, 0), 3);
  auto e = PipelineSpec::explicit_map({1, 0, 1}, 2, false);
  EXPECT_EQ(e.devices, 2);
  TaskGraph g(e);
  EXPECT_EQ(g.tasks_per_device(), (std::vector<int>{4, 8}));
}

TEST(Graph, InvalidSpecsAreRejected) {
  EXPECT_THROW(PipelineSpec::linear(0, 4, false), SpecError);
  EXPECT_THROW(PipelineSpec::linear(4, 0, false), SpecError);
  EXPECT_THROW(PipelineSpec::explicit_map({0, 2}, 2, false), SpecError);  // device 1 empty
  EXPECT_THROW(PipelineSpec::linear(4, 1 << 25, true), SpecError);
}
