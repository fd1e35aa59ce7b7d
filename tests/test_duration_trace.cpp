// Trace-driven workloads (codelets/duration_trace.hpp): a training trace's
// pass durations replayed exactly, resampled to more stages, and bad files
// refused with a message naming the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "plot/timeline.hpp"
#include "sim/scenario.hpp"

using namespace rrfp;

namespace {

std::string tmp(const std::string& n) { return ::testing::TempDir() + "dur_" + n; }

// Duration of pass (stage, letter, mb) at `step`: distinct for every cell,
// so a replay that takes the wrong one is caught.
double recorded(int stage, char kind, int mb, int step) {
  return 1e-3 * (1 + stage + 0.1 * mb + 0.01 * step + (kind == 'B' ? 0.5 : 0));
}

// What `rrfp train --trace` writes for `steps` steps of 1F1B (fused) on
// `stages` stages and `mbs` microbatches, optimizer slices included.
Timeline training_trace(int stages, int mbs, int steps, const std::string& model = "gpt-tiny") {
  Timeline t;
  t.title = fmt::format("rrfp train {} 1f1b S={} M={}", model, stages, mbs);
  for (int d = 0; d < stages; ++d) t.tracks.push_back(fmt::format("device {}", d));
  double clock = 0;
  for (int step = 0; step < steps; ++step) {
    for (int s = 0; s < stages; ++s)
      for (char k : {'F', 'B'})
        for (int m = 0; m < mbs; ++m) {
          const double d = recorded(s, k, m, step);
          t.slices.push_back({s, fmt::format("{}{}{}", s, k, m), clock, clock + d});
          clock += d;
        }
    for (int s = 0; s < stages; ++s) t.slices.push_back({s, fmt::format("opt{}", s), clock, clock + 1e-4});
    clock += 1e-3;
  }
  return t;
}

std::string write(const Timeline& t, const std::string& name) {
  const std::string p = tmp(name);
  write_chrome_trace(t, p);
  return p;
}

void expect_error(const std::string& path, const std::string& needle) {
  try {
    read_duration_trace(path);
    ADD_FAILURE() << path << ": no error (expected one naming '" << needle << "')";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "the message names the file: " << e.what();
  }
}

}  // namespace

TEST(DurationTrace, ReadsATrainingTrace) {
  DurationTrace t = read_duration_trace(write(training_trace(2, 4, 3), "ok.json"));
  EXPECT_EQ(t.model, "gpt-tiny");
  EXPECT_EQ(t.stages, 2);
  EXPECT_EQ(t.microbatches, 4);
  EXPECT_EQ(t.steps, 3);
  EXPECT_TRUE(t.fused);
  EXPECT_NEAR(t.at(Kind::BW, 1, 3)[2], recorded(1, 'B', 3, 2), 1e-9);
  EXPECT_EQ(t.pool(Kind::F, 0).size(), 12u);
}

TEST(DurationTrace, ReplaysExactlyAtTheTracesStages) {
  auto t = std::make_shared<DurationTrace>(read_duration_trace(write(training_trace(2, 4, 3), "exact.json")));
  Hint h = gen_1f1b({2, 4, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  for (std::uint64_t seed : {0, 1, 2, 5}) {
    CostOptions o;
    o.durations = t;
    o.seed = seed;
    Durations d = draw(g, o);
    for (int id = 0; id < g.size(); ++id) {
      const Task& x = g.task(id);
      EXPECT_NEAR(d.task_s[id], recorded(x.stage, x.kind == Kind::F ? 'F' : 'B', x.mb, static_cast<int>(seed % 3)), 1e-9)
          << g.label(id) << " seed " << seed;
    }
  }
  // The simulator runs on them and the lower bound is theirs.
  Scenario sc;
  sc.cost.durations = t;
  ScenarioResult r = run_scenario(h, sc);
  EXPECT_TRUE(r.sim.complete);
  EXPECT_GE(r.sim.makespan, r.lb.bound - 1e-12);
}

TEST(DurationTrace, ResamplesEachStagesDistributionAtMoreStages) {
  auto t = std::make_shared<DurationTrace>(read_duration_trace(write(training_trace(2, 4, 3), "resample.json")));
  Hint h = gen_1f1b({8, 16, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  CostOptions o;
  o.durations = t;
  o.seed = 7;
  Durations a = draw(g, o), b = draw(g, o);
  EXPECT_EQ(a.task_s, b.task_s);  // seeded: every policy faces the same durations
  std::set<double> distinct;
  for (int id = 0; id < g.size(); ++id) {
    const Task& x = g.task(id);
    const auto& pool = t->pool(x.kind, x.stage * 2 / 8);  // stages 0-3 from trace stage 0, 4-7 from 1
    EXPECT_NE(std::find(pool.begin(), pool.end(), a.task_s[id]), pool.end()) << g.label(id);
    distinct.insert(a.task_s[id]);
  }
  EXPECT_GT(distinct.size(), 10u);  // drawn, not one value repeated
  o.seed = 8;
  EXPECT_NE(draw(g, o).task_s, a.task_s);
}

TEST(DurationTrace, BadFilesGetAClearError) {
  expect_error(tmp("missing.json"), "missing.json");
  {
    std::ofstream(tmp("garbage.json")) << "{ not json";
    expect_error(tmp("garbage.json"), "garbage.json");
  }
  Timeline bench = training_trace(2, 4, 1);
  bench.title = "rrfp bench rrfp 1f1b";
  expect_error(write(bench, "bench.json"), "not a trace of `rrfp train --trace`");
  Timeline odd = training_trace(2, 4, 1);
  odd.slices.push_back({0, "hello", 0, 1});
  expect_error(write(odd, "odd.json"), "slice 'hello'");
  Timeline neg = training_trace(2, 4, 1);
  neg.slices[3].end_s = neg.slices[3].start_s - 1e-3;
  expect_error(write(neg, "neg.json"), "negative duration");
  Timeline hole = training_trace(2, 4, 2);
  hole.slices.erase(hole.slices.begin() + 5);  // one pass missing from step 0
  expect_error(write(hole, "hole.json"), "recorded 1 times, the others 2");
  Timeline empty = training_trace(2, 4, 1);
  empty.slices.clear();
  expect_error(write(empty, "empty.json"), "no complete");
  // One pass recorded once too often: that pass is named, not another.
  Timeline extra = training_trace(2, 4, 3);
  extra.slices.push_back({0, "0F2", 100, 100.001});
  expect_error(write(extra, "extra.json"), "pass 0F2 is recorded 4 times, the others 3");
  Timeline zero = training_trace(2, 4, 1);
  for (auto& sl : zero.slices) sl.end_s = sl.start_s;
  expect_error(write(zero, "zero.json"), "every pass lasts 0 s");
  Timeline half = training_trace(2, 4, 1);  // a microbatch with an I and no W
  half.slices.push_back({0, "0I0", 100, 100.001});
  expect_error(write(half, "half.json"), "microbatch 0 of stage 0 has an I but no W");
}

namespace {

// What a dualpipev run records: a fused (B) or a split (I, W) backward per
// (stage, microbatch); here split when (s + m) % 3 == 0, with I = 0.3 and
// W = 0.7 of what the fused one would have cost.
Timeline mixed_trace(int stages, int mbs, int steps) {
  Timeline t;
  t.title = fmt::format("rrfp train gpt-tiny dualpipev S={} M={}", stages / 2, mbs);
  for (int d = 0; d < stages / 2; ++d) t.tracks.push_back(fmt::format("device {}", d));
  double clock = 0;
  auto add = [&](int s, const std::string& name, double d) {
    t.slices.push_back({std::min(s, stages - 1 - s), name, clock, clock + d});
    clock += d;
  };
  for (int step = 0; step < steps; ++step)
    for (int s = 0; s < stages; ++s)
      for (int m = 0; m < mbs; ++m) {
        add(s, fmt::format("{}F{}", s, m), recorded(s, 'F', m, step));
        const double b = recorded(s, 'B', m, step);
        if ((s + m) % 3 != 0) {
          add(s, fmt::format("{}B{}", s, m), b);
        } else {
          add(s, fmt::format("{}I{}", s, m), 0.3 * b);
          add(s, fmt::format("{}W{}", s, m), 0.7 * b);
        }
      }
  return t;
}

}  // namespace

// dualpipev's traces replay: each microbatch's recorded form as it was,
// the other form derived (fused = I + W; I, W = B x the stage's mean share).
TEST(DurationTrace, ReplaysATraceWithBothBackwardForms) {
  const DurationTrace t = read_duration_trace(write(mixed_trace(4, 4, 2), "dualpipev.json"));
  EXPECT_TRUE(t.mixed);
  for (int s = 0; s < 4; ++s)
    for (int m = 0; m < 4; ++m)
      for (int step = 0; step < 2; ++step) {
        const double b = recorded(s, 'B', m, step);
        EXPECT_NEAR(t.value(Kind::BW, s, m, step), b, 1e-12) << s << " " << m;
        EXPECT_NEAR(t.value(Kind::B, s, m, step), 0.3 * b, 1e-12) << s << " " << m;
        EXPECT_NEAR(t.value(Kind::W, s, m, step), 0.7 * b, 1e-12) << s << " " << m;
      }
  // On dualpipev's own graph (2 devices, 4 stages, 4 microbatches), exactly.
  const Hint h = make_hint("dualpipev", {2, 4, 0, -1, 0});
  const TaskGraph& g = *h.graph;
  ASSERT_EQ(g.spec().stages, 4);
  check_trace_fits(t, g, "gpt-tiny");
  CostOptions o;
  o.durations = std::make_shared<DurationTrace>(t);
  o.seed = 1;
  const Durations d = draw(g, o);
  for (int id = 0; id < g.size(); ++id) {
    const Task& x = g.task(id);
    EXPECT_NEAR(d.task_s[id], t.value(x.kind, x.stage, x.mb, 1), 1e-12) << g.label(id);
  }
  // And resampled to 8 stages, where the simulator runs it.
  Scenario sc;
  sc.cost.durations = o.durations;
  const ScenarioResult r = run_scenario(make_hint("dualpipev", {4, 8, 0, -1, 0}), sc);
  EXPECT_TRUE(r.sim.complete) << r.sim.stuck;
  // A stage that never ran split cannot give a split pass its share.
  Timeline fused_stage = mixed_trace(4, 4, 1);
  auto& sl = fused_stage.slices;
  sl.erase(std::remove_if(sl.begin(), sl.end(), [](const Slice& x) { return x.name[0] == '1' && x.name[1] != 'F'; }),
           sl.end());
  for (int m = 0; m < 4; ++m) sl.push_back({1, fmt::format("1B{}", m), 200.0 + m, 200.001 + m});
  const DurationTrace f = read_duration_trace(write(fused_stage, "fused_stage.json"));
  try {
    check_trace_fits(f, *make_hint("zb-h1", {4, 4, 0, -1, 0}).graph);
    ADD_FAILURE() << "a split pass of an all-fused stage was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("passes of stage 1 and the trace recorded none (only fused backwards"),
              std::string::npos)
        << e.what();
  }
}

TEST(DurationTrace, AGraphItDoesNotFitIsRefused) {
  DurationTrace t = read_duration_trace(write(training_trace(4, 4, 1, "mm-tiny"), "fit.json"));
  auto refuses = [&](const Hint& h, const std::string& model, const std::string& needle) {
    try {
      check_trace_fits(t, *h.graph, model);
      ADD_FAILURE() << "accepted " << h.name;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refuses(gen_1f1b({2, 4, 0, 0, 0}), "", "it has 4 stages and the pipeline 2");
  refuses(gen_zb_h1({4, 4, 0, -1, 0}), "", "the graph needs B passes");  // split backward, trace fused
  refuses(gen_1f1b({4, 4, 0, 0, 0}), "gpt-tiny", "a trace of model 'mm-tiny', not 'gpt-tiny'");
  EXPECT_NO_THROW(check_trace_fits(t, *gen_1f1b({4, 8, 0, 0, 0}).graph, "mm-tiny"));  // more microbatches: resampled
  CostOptions o;
  o.durations = std::make_shared<DurationTrace>(t);
  o.var = parse_variability("lognormal:0.3");
  EXPECT_THROW(validate(o), SpecError);  // measured durations and a synthetic spread: one or the other
}
