#include <gtest/gtest.h>

#include <cmath>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"

using namespace rrfp;

TEST(CostModel, ParsesCostsAndRejectsBadOnes) {
  BaseCost c = parse_cost("F=1,B=2,W=0.5");
  EXPECT_EQ(c.of(Kind::F), 1);
  EXPECT_EQ(c.of(Kind::BW), 2.5);
  EXPECT_EQ(parse_cost("bw=3").of(Kind::BW), 3);
  EXPECT_THROW(parse_cost("F=-1"), SpecError);
  EXPECT_THROW(parse_cost("X=1"), SpecError);
  EXPECT_THROW(parse_cost("F=abc"), SpecError);
  EXPECT_THROW(parse_cost("F"), SpecError);
}

TEST(CostModel, ParsesVariabilityAndRejectsBadOnes) {
  EXPECT_EQ(parse_variability("none").type, Variability::Type::None);
  EXPECT_EQ(parse_variability("lognormal:0.6").sigma, 0.6);
  Variability s = parse_variability("straggler:2:3:0.25");
  EXPECT_EQ(s.stage, 2);
  EXPECT_EQ(s.factor, 3);
  EXPECT_EQ(s.prob, 0.25);
  EXPECT_EQ(parse_variability("multimodal:1").type, Variability::Type::Multimodal);
  for (const char* bad : {"gamma:1", "lognormal", "lognormal:-1", "lognormal:x", "straggler:1:2", "straggler:0:2:1.5",
                          "straggler:-1:2:0.5", "straggler:0:0:0.5", "none:1"})
    EXPECT_THROW(parse_variability(bad), SpecError) << bad;
}

TEST(CostModel, SameSeedSameDurationsAcrossGraphs) {
  CostOptions o;
  o.var = parse_variability("lognormal:0.6");
  o.seed = 7;
  Hint a = make_hint("1f1b", {4, 8, 0, 1, 0});
  Hint b = make_hint("gpipe", {4, 8, 0, 1, 0});
  Durations da = draw(*a.graph, o), da2 = draw(*a.graph, o), db = draw(*b.graph, o);
  EXPECT_EQ(da.task_s, da2.task_s);
  for (int id = 0; id < a.graph->size(); ++id) {
    const Task& t = a.graph->task(id);
    EXPECT_EQ(da.task_s[id], db.task_s[b.graph->find(t.kind, t.stage, t.mb)]);
  }
  o.seed = 8;
  EXPECT_NE(draw(*a.graph, o).task_s, da.task_s);
}

TEST(CostModel, LognormalIsMeanPreserving) {
  CostOptions o;
  o.var = parse_variability("lognormal:0.6");
  Hint h = make_hint("gpipe", {4, 2000, 0, 1, 0});
  Durations d = draw(*h.graph, o);
  double sum = 0;
  for (double x : d.task_s) sum += x;
  EXPECT_NEAR(sum / d.task_s.size(), 1e-3, 0.05e-3);
}

TEST(CostModel, StragglerAndMultimodal) {
  Hint h = make_hint("gpipe", {4, 400, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  CostOptions o;
  o.var = parse_variability("straggler:1:4:0.5");
  Durations d = draw(g, o);
  int slow = 0;
  for (int id = 0; id < g.size(); ++id) {
    double base = o.base.of(g.task(id).kind) * 1e-3;
    if (g.task(id).stage != 1) EXPECT_DOUBLE_EQ(d.task_s[id], base);
    else slow += d.task_s[id] > base * 2;
  }
  EXPECT_NEAR(slow, 400, 80);  // half of the 800 stage-1 tasks
  o.var = parse_variability("straggler:9:4:0.5");
  EXPECT_THROW(draw(g, o), SpecError);

  o.var = parse_variability("multimodal:1.0");
  d = draw(g, o);
  // Anti-correlated: stage 0 heavy when stage 1 light.
  double sx = 0, sy = 0, sxy = 0, sxx = 0, syy = 0;
  for (int m = 0; m < 400; ++m) {
    double x = std::log(d.task_s[g.find(Kind::F, 0, m)]), y = std::log(d.task_s[g.find(Kind::F, 1, m)]);
    sx += x, sy += y, sxy += x * y, sxx += x * x, syy += y * y;
  }
  double cov = sxy / 400 - sx / 400 * sy / 400;
  double r = cov / std::sqrt((sxx / 400 - sx * sx / 160000) * (syy / 400 - sy * sy / 160000));
  EXPECT_LT(r, -0.99);
}

TEST(CostModel, LinkDelaysOnlyAcrossDevices) {
  Hint h = make_hint("1f1b", {3, 4, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  CostOptions o;
  o.link_ms = 2;
  o.link_jitter = 0.5;
  Durations d = draw(g, o);
  for (int id = 0; id < g.size(); ++id) {
    int k = 0;
    for (int p : g.preds(id)) {
      double e = d.edge(id, k++);
      if (g.task(p).device == g.task(id).device) EXPECT_EQ(e, 0);
      else EXPECT_TRUE(e >= 1e-3 && e <= 3e-3) << e;
    }
  }
  o.link_jitter = 1.5;
  EXPECT_THROW(draw(g, o), SpecError);
  o.link_jitter = 0;
  o.unit_ms = 0;
  EXPECT_THROW(draw(g, o), SpecError);
}

TEST(CostModel, LowerBoundMatchesTightSchedules) {
  // Unit costs, no variability: 1F1B is optimal, (M + S - 1) * 3 units.
  Hint h = make_hint("1f1b", {4, 8, 0, 0, 0});
  CostOptions o;
  Durations d = draw(*h.graph, o);
  LowerBound lb = lower_bound(*h.graph, d);
  EXPECT_NEAR(lb.bound, 33e-3, 1e-12);
  EXPECT_NEAR(lb.critical_path, 12e-3, 1e-12);
  ReplayResult r = replay_strict(h, [&](int id) { return d.task_s[id]; });
  EXPECT_GE(r.makespan + 1e-12, lb.bound);
  // Link delays lengthen the critical path.
  o.link_ms = 1;
  EXPECT_NEAR(lower_bound(*h.graph, draw(*h.graph, o)).critical_path, 12e-3 + 6e-3, 1e-12);
}
