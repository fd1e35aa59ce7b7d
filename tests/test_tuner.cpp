// The tuner (rrfp tune), its profile and plan files, and the cost-aware
// greedy generator, on synthetic profiles: pure C++, no training.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <numeric>
#include <random>

#include "hints/csv.hpp"
#include "hints/gen_greedy.hpp"
#include "hints/generators.hpp"
#include "hints/validate.hpp"
#include "sched/memory_budget.hpp"
#include "sim/plan.hpp"
#include "sim/scenario.hpp"
#include "sim/tuner.hpp"
#include "synthetic_profile.hpp"

namespace rrfp {
namespace {

double simulated_step(const Plan& plan, Mode mode) {
  Objective o = plan_objective(plan);
  o.mode = mode;
  const StepEstimate e = estimate_step(plan_hint(plan), plan.costs, o);
  EXPECT_TRUE(e.complete) << e.stuck;
  return e.step_s;
}

// A plan tuned on one placement (o.placements): written and read back, it
// keeps its partition and placement and simulates to its prediction; the
// default search (every placement) on the same devices tries it too.
void expect_round_trip_and_searched(const ModelProfile& p, TuneOptions o, const Plan& plan) {
  const std::string path = ::testing::TempDir() + "/plan_" + plan.placement + ".json";
  write_plan(path, plan);
  const Plan back = read_plan(path);
  EXPECT_EQ(back.counts, plan.counts);
  EXPECT_EQ(back.placement, plan.placement);
  EXPECT_NEAR(simulated_step(back, o.objective.mode), plan.predicted_step_s, 1e-12);
  o.placements.clear();
  bool tried = false;
  for (const auto& t : tune(p, o).tried) tried = tried || t.value("placement", "") == plan.placement;
  EXPECT_TRUE(tried) << plan.placement;
}

}  // namespace

TEST(Tuner, PartitionCoversEveryLayerOnceInOrder) {
  const ModelProfile p = synthetic({1, 2, 3, 4, 5, 6, 7, 8});
  TuneOptions o;
  o.devices = 2;
  for (int S = 1; S <= 10; ++S) {
    const std::vector<int> c = balanced_counts(p, S);
    ASSERT_EQ(static_cast<int>(c.size()), S);
    EXPECT_NO_THROW(check_counts(c, p.blocks()));
    const StageCosts sc = stage_costs(p, c);
    double f = 0, w = 0;
    for (int s = 0; s < S; ++s) f += sc.cost[s].f, w += sc.weight_bytes[s];
    double want_f = 0, want_w = 0;
    for (const LayerProfile& l : p.layers) want_f += l.f.mean_s * 1e3, want_w += l.weight_bytes;
    EXPECT_NEAR(f, want_f, 1e-9) << "S=" << S;  // every layer counted exactly once
    EXPECT_NEAR(w, want_w, 1e-6) << "S=" << S;
  }
  // Stage s of the plan holds blocks in order: the first stage's come first.
  const std::vector<int> c = balanced_counts(p, 2);
  EXPECT_GT(c[0], c[1]);  // the later blocks are heavier
  EXPECT_THROW(check_counts({4, 0, 4}, 8), SpecError);     // an empty middle stage
  EXPECT_THROW(check_counts({4, 3}, 8), SpecError);        // a block left out
  EXPECT_THROW(check_counts({-1, 9}, 8), SpecError);
  EXPECT_NO_THROW(check_counts({0, 8, 0}, 8));             // embedding alone, head alone
  EXPECT_THROW(balanced_counts(p, 11), SpecError);
}

TEST(Tuner, CutsAroundOneHeavyLayer) {
  // Block 5 costs as much as all the others together: the tuned plan gives
  // it a stage (nearly) of its own, where the even split pairs it with others.
  std::vector<double> ms(8, 1.0);
  ms[5] = 12;
  const ModelProfile p = synthetic(ms);
  TuneOptions o;
  o.devices = 4;
  o.microbatches = 8;
  o.placements = {"linear"};
  const Plan plan = tune(p, o);
  int at = 0, stage_of_heavy = -1;
  for (size_t s = 0; s < plan.counts.size(); ++s) {
    if (5 >= at && 5 < at + plan.counts[s]) stage_of_heavy = static_cast<int>(s);
    at += plan.counts[s];
  }
  ASSERT_GE(stage_of_heavy, 0);
  EXPECT_EQ(plan.counts[stage_of_heavy], 1) << "the heavy block shares its stage";
  // And it beats the even split (which pairs it with block 4) under the
  // same hint: the heavy stage bounds both, by 12 ms against 13 a microbatch.
  Plan even = plan;
  even.counts = even_counts("gpt-tiny", 8, 4);
  even.costs = stage_costs(p, even.counts);
  EXPECT_LT(plan.predicted_step_s, simulated_step(even, o.objective.mode) * 0.95);
  EXPECT_NEAR(simulated_step(plan, o.objective.mode), plan.predicted_step_s, 1e-12);
}

TEST(Tuner, NeverExceedsTheMemoryLimitAndRefusesAnImpossibleOne) {
  const ModelProfile p = synthetic({1, 1, 2, 2, 3, 3, 4, 4});
  TuneOptions o;
  o.devices = 2;
  o.microbatches = 8;
  const Plan free = tune(p, o);
  const double need = *std::max_element(free.memory_bytes.begin(), free.memory_bytes.end());
  int over_free = 0;
  for (double frac : {0.9, 0.75, 0.6}) {
    o.memory_bytes = need * frac;
    Plan plan;
    try {
      plan = tune(p, o);
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find("no plan fits"), std::string::npos) << e.what();
      continue;
    }
    // Every seed of the objective, and a seed it never saw, fit.
    for (std::uint64_t seed : {1, 2, 3, 4, 5, 99}) {
      ScenarioResult r = run_scenario(plan_hint(plan), cost_scenario(plan.costs, plan_objective(plan), seed));
      ASSERT_TRUE(r.sim.complete);
      for (int d = 0; d < o.devices; ++d)
        EXPECT_LE(r.sim.peak_activation_bytes[d] + kStateCopies * r.sim.weight_bytes[d], o.memory_bytes + 1e-6)
            << "device " << d << " at " << frac << " of the free plan's memory, seed " << seed;
    }
    // `rrfp train --plan` enforces the limit: the plan's own order fits its
    // budget. Tightened to that order's own need, the budget binds: with
    // slack, readiness-first goes above it without the budget, never with.
    const Hint h = plan_hint(plan);
    Objective ob = plan_objective(plan);
    ASSERT_FALSE(enforced_budget(h, plan.costs, ob).empty()) << "at " << frac;
    const MemoryBudget probe(h, {plan.costs.activation_bytes, std::vector<double>(h.devices(), 1e300), true});
    const std::vector<double> act = activation_budget(h, plan.costs, ob.memory_bytes);
    double tight = 0;
    for (int d = 0; d < o.devices; ++d) tight = std::max(tight, probe.hint_peak(d) + ob.memory_bytes - act[d]);
    ob.memory_bytes = tight;
    const std::vector<double> budget = enforced_budget(h, plan.costs, ob);
    ASSERT_EQ(budget.size(), static_cast<size_t>(o.devices)) << "at " << frac;
    for (std::uint64_t seed = 100; seed < 120; ++seed) {
      Scenario sc = cost_scenario(plan.costs, ob, seed);
      sc.mode = Mode::ReadinessFirst;
      sc.inflight_slack = 3;
      const ScenarioResult free_run = run_scenario(h, sc);
      sc.memory_budget = budget;
      const ScenarioResult r = run_scenario(h, sc);
      ASSERT_TRUE(r.sim.complete) << r.sim.stuck;
      for (int d = 0; d < o.devices; ++d) {
        over_free += free_run.sim.peak_activation_bytes[d] + kStateCopies * free_run.sim.weight_bytes[d] > tight + 1e-6;
        EXPECT_LE(r.sim.peak_activation_bytes[d] + kStateCopies * r.sim.weight_bytes[d], tight + 1e-6)
            << "device " << d << " at " << frac << ", budget enforced, seed " << seed;
      }
    }
  }
  EXPECT_GT(over_free, 0);
  o.memory_bytes = 1;  // nothing fits one byte
  try {
    tune(p, o);
    FAIL() << "a one-byte limit was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("no plan fits 1 B per device"), std::string::npos) << e.what();
  }
}

TEST(Tuner, RefusesPlansThatDoNotFitTheModelOrTheDevices) {
  const ModelProfile p = synthetic({1, 1, 1});
  TuneOptions o;
  o.devices = 8;  // 8 stages > 3 blocks + first + last
  EXPECT_THROW(tune(p, o), SpecError);
  o.devices = 0;
  EXPECT_THROW(tune(p, o), SpecError);
  o.devices = 2;
  o.placements = {"diagonal"};
  EXPECT_THROW(tune(p, o), SpecError);
  o.placements = {"linear"};  // zbv runs on the V-shape only: say so, not "nothing fits"
  o.schedules = {"zbv"};
  try {
    tune(p, o);
    ADD_FAILURE() << "zbv on a linear placement was tuned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("none of them runs on the placements searched (these do: linear gpipe, linear 1f1b"),
              std::string::npos)
        << e.what();
  }
}

TEST(Tuner, PlanFilesRoundTripAndBadOnesAreRefused) {
  const ModelProfile p = synthetic({1, 2, 3, 4});
  TuneOptions o;
  o.devices = 2;
  o.microbatches = 4;
  const Plan plan = tune(p, o);
  const std::string path = ::testing::TempDir() + "/plan.json";
  write_plan(path, plan);
  const Plan back = read_plan(path);
  EXPECT_EQ(back.counts, plan.counts);
  EXPECT_EQ(back.stage_device, plan.stage_device);
  if (bidirectional_placement(plan.placement))
    EXPECT_EQ(plan_hint(back).spec().pipelines(), 2);
  else
    EXPECT_EQ(export_csv(plan_hint(back)), plan.csv);
  EXPECT_NEAR(simulated_step(back, o.objective.mode), plan.predicted_step_s, 1e-12);

  nlohmann::json j = plan_json(plan);
  j["devices"] = 3;  // the hint has 2 rows
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  j = plan_json(plan);
  j["partition"] = std::vector<int>{4};  // one stage, the costs list more
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  j = plan_json(plan);
  j["format"] = "something";
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  // Hand-edited fields are named, not silently replaced.
  auto refused = [&](const char* key, nlohmann::json value, const std::string& message,
                     nlohmann::json x = nlohmann::json()) {
    if (x.is_null()) x = plan_json(plan);
    x[key] = std::move(value);
    try {
      parse_plan(x, "edited.json");
      ADD_FAILURE() << key << " accepted";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused("placement", "nosuch", "edited.json: 'placement': unknown placement 'nosuch'");
  refused("placement", "interleaved:x", "edited.json: 'placement' interleaved:V: 'x'");
  refused("policy", "nosuch", "edited.json: unknown arbitration mode 'nosuch'");
  refused("version", 99, "plan format version 99");
  // Numbers out of range are refused, not wrapped, clamped or taken as meant.
  refused("devices", 4294967298ULL, "'devices' = 4294967298 is out of range");
  refused("partition", std::vector<long long>{2147483647LL, 2147483647LL}, "the partition covers 4294967294 blocks");
  refused("predicted_seeds", 2000000000, "'predicted_seeds' = 2000000000 must be a number from 1 to 1000");
  refused("inflight_slack", 2147483647, "inflight_slack must be from 0 to 100000");
  refused("policy", 3, "edited.json: 'policy' = 3 must be a string");
  refused("schedule", 5, "'schedule' = 5 must be a string");
  refused("mirror_reduce", true, "'mirror_reduce' = true must be a string");
  refused("memory_bytes", "x", "'memory_bytes' must be a list of numbers");
  refused("memory_bytes", {1.0, -2.0}, "'memory_bytes' holds -2.0");
  refused("memory_bytes", {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}, "'memory_bytes' lists 7 devices, the plan has");
  j = plan_json(plan);  // a bidirectional plan's placement edited: no order to run
  j["placement"] = "linear";
  refused("hint_csv", "", "edited.json: a linear plan holds its order in 'hint_csv', which is empty", j);
  refused("stages", nlohmann::json::object(), "'stages' = {} must be a list of stage costs");
  refused("stages", {5, 5}, "a stage of 'stages' is 5, not an object of its costs");
  refused("version", 2147483648LL, "'version' = 2147483648 is out of range");
  // A limit no plan file could hold back is refused before the search.
  TuneOptions limit;
  limit.devices = 2;
  limit.microbatches = 4;
  limit.memory_bytes = 2e18;
  try {
    check_tune_options(limit);
    ADD_FAILURE() << "--memory-mb past a plan's bound accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("is more than a plan holds"), std::string::npos) << e.what();
  }
  refused("link", {{"bandwidth_Bps", -1}}, "'bandwidth_Bps' = -1");
  auto stage_refused = [&](const char* key, double value, const std::string& message) {
    nlohmann::json x = plan_json(plan);
    x["stages"][0][key] = value;
    try {
      parse_plan(x, "edited.json");
      ADD_FAILURE() << key << " = " << value << " accepted";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  stage_refused("weight_bytes", -1e8, "'weight_bytes' = -100000000.0");
  stage_refused("sigma", 1e300, "'sigma' = 1e+300");
  stage_refused("BW_ms", -5, "costs -5 ms");
  EXPECT_THROW(read_plan(::testing::TempDir() + "/no-such-plan.json"), SpecError);
}

TEST(Tuner, SearchesTheBidirectionalPlacement) {
  const ModelProfile p = synthetic({1, 1, 2, 2, 3, 3, 4, 4});
  TuneOptions o;
  o.devices = 4;
  o.microbatches = 8;
  o.placements = {"bidirectional"};
  const Plan plan = tune(p, o);
  EXPECT_EQ(plan.placement, "bidirectional");
  EXPECT_EQ(plan.schedule, "chimera");
  EXPECT_TRUE(plan.csv.empty());  // a CSV cannot name a stage's two copies
  const Hint h = plan_hint(plan);
  ASSERT_EQ(h.spec().pipelines(), 2);
  for (int d = 0; d < o.devices; ++d)  // stage d down, stage D-1-d up
    EXPECT_EQ(h.spec().placement[0][d] + h.spec().placement[1][o.devices - 1 - d], 2 * d) << "device " << d;
  expect_round_trip_and_searched(p, o, plan);
  // A bidirectional plan with a CSV, or with a one-directional schedule, is refused.
  nlohmann::json j = plan_json(plan);
  j["hint_csv"] = "0F0,0B0";
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  j = plan_json(plan);
  j["schedule"] = "1f1b";
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  o.devices = 3;  // odd: Chimera cannot place it
  o.placements = {"bidirectional"};
  EXPECT_THROW(tune(p, o), SpecError);
}

TEST(Tuner, SearchesTheAsymmetricBidirectionalPlacement) {
  const ModelProfile p = synthetic({1, 1, 2, 2, 3, 3, 4, 4, 1, 1, 2, 2});
  TuneOptions o;
  o.devices = 4;
  o.microbatches = 8;
  // The start: Chimera's balanced cuts for one direction, the other's one
  // block later.
  const std::vector<int> sym = balanced_counts(p, 4), start = asymmetric_start(p, 4);
  ASSERT_EQ(start.size(), 7u);
  EXPECT_EQ(start[0], sym[0]);
  for (int k = 1; k < 7; k += 2) EXPECT_EQ(start[k], 1) << "stage " << k;
  EXPECT_EQ(std::accumulate(start.begin(), start.end(), 0), p.blocks());
  o.placements = {"bidirectional-asym"};
  const Plan plan = tune(p, o);
  EXPECT_EQ(plan.placement, "bidirectional-asym");
  EXPECT_EQ(plan.schedule, "chimera-asym");
  EXPECT_TRUE(plan.csv.empty());
  ASSERT_EQ(plan.counts.size(), 7u);
  EXPECT_EQ(std::accumulate(plan.counts.begin(), plan.counts.end(), 0), p.blocks());
  const Hint h = plan_hint(plan);
  ASSERT_EQ(h.spec().pipelines(), 2);
  // Each direction cuts the stages into the 4 devices' contiguous groups,
  // at different layers: the layers before each device change differ.
  std::vector<int> cut[2];
  for (int dir = 0; dir < 2; ++dir) {
    const std::vector<int>& at = h.spec().placement[dir];
    int layers = 0;
    for (int s = 0; s < 7; ++s) {
      if (s > 0 && at[s] != at[s - 1]) {
        EXPECT_EQ(at[s], at[s - 1] + (dir == 0 ? 1 : -1)) << "direction " << dir << ", stage " << s;
        cut[dir].push_back(layers);
      }
      layers += plan.counts[s] + (s == 0 ? 1 : 0);
    }
    EXPECT_EQ(cut[dir].size(), 3u) << "direction " << dir;
  }
  for (int k = 0; k < 3; ++k) EXPECT_LT(cut[0][k], cut[1][k]) << "cut " << k;
  expect_round_trip_and_searched(p, o, plan);
  // Chimera's schedule in an asymmetric plan does not match its stages.
  nlohmann::json j = plan_json(plan);
  j["schedule"] = "chimera";
  EXPECT_THROW(parse_plan(j, "bad"), SpecError);
  // Odd devices, or too few blocks for 2D-1 stages, are refused.
  o.placements = {"bidirectional-asym"};
  o.devices = 3;
  EXPECT_THROW(tune(p, o), SpecError);
  o.devices = 4;
  EXPECT_THROW(tune(synthetic({1, 1, 1, 1}), o), SpecError);
}

TEST(Tuner, ProfileFilesRoundTripAndBadOnesAreRefused) {
  const ModelProfile p = synthetic({1, 2});
  const std::string path = ::testing::TempDir() + "/profile.json";
  write_profile(path, p);
  const ModelProfile back = read_profile(path);
  ASSERT_EQ(back.layers.size(), p.layers.size());
  EXPECT_EQ(back.layers[2].f.mean_s, p.layers[2].f.mean_s);
  nlohmann::json j = profile_json(p);
  j["layers"][1]["F"]["mean_s"] = -1;
  EXPECT_THROW(parse_profile(j, "bad"), SpecError);
  j = profile_json(p);
  j["layers"][1].erase("W");
  EXPECT_THROW(parse_profile(j, "bad"), SpecError);
  j = profile_json(p);
  j["message_bytes"] = std::vector<double>{1};
  EXPECT_THROW(parse_profile(j, "bad"), SpecError);
  j = profile_json(p);
  j["config"]["layers"] = 7;
  EXPECT_THROW(parse_profile(j, "bad"), SpecError);
  for (nlohmann::json mbs : {nlohmann::json(2.5), nlohmann::json(4294967297ULL), nlohmann::json("2")}) {
    j = profile_json(p);
    j["micro_batch_size"] = mbs;  // not read as 2 or 1
    EXPECT_THROW(parse_profile(j, "bad"), SpecError) << mbs;
  }
  j = profile_json(p);
  j["model"] = 3;  // a type error is a SpecError too (exit 2), not nlohmann's
  EXPECT_THROW(parse_profile(j, "bad"), SpecError);
  // Stage counts that overflow an int are refused, not summed to the right total.
  EXPECT_THROW(stage_costs(p, {2147483647, 2147483647, 4}), SpecError);
  std::ofstream(path) << "{ not json";
  EXPECT_THROW(read_profile(path), SpecError);
}

TEST(Tuner, EvenCountsAreTheTrainersSplit) {
  EXPECT_EQ(even_counts("gpt-tiny", 8, 3), (std::vector<int>{3, 3, 2}));
  EXPECT_EQ(even_counts("mm-tiny", 4, 3), (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(even_counts("mm-tiny", 4, 1), (std::vector<int>{4}));
  EXPECT_THROW(even_counts("gpt-tiny", 2, 3), SpecError);
}

// The greedy generator on every placement, random costs and caps: a valid
// hint that completes under readiness-first and under the strict order.
TEST(GreedySchedule, ValidatesAndCompletesUnderRrfpAndFixed) {
  std::mt19937 rng(7);
  int runs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int D = 2 + trial % 3, M = 2 + trial % 7;
    const int kind = trial % 3;
    const PipelineSpec spec = kind == 0 ? PipelineSpec::linear(D, M, true)
                              : kind == 1 ? PipelineSpec::interleaved(D, 2, M, true)
                                          : PipelineSpec::vshape(D, M, true);
    Hint h;
    h.graph = std::make_shared<TaskGraph>(spec);
    std::uniform_real_distribution<double> u(0.2, 3.0);
    std::vector<double> cost(spec.stages * 4);
    for (double& c : cost) c = u(rng) * 1e-3;
    GreedyOptions go;
    for (int d = 0; d < D; ++d) go.cap.push_back(1 + static_cast<int>(rng() % (2 * D)));
    const TaskGraph& g = *h.graph;
    go.duration = [&](int id) { return cost[g.task(id).stage * 4 + static_cast<int>(g.task(id).kind)]; };
    go.link_s = (trial % 4) * 1e-4;
    ASSERT_NO_THROW(greedy_schedule(h, go)) << "trial " << trial;
    EXPECT_NO_THROW(validate_hint(h)) << "trial " << trial;
    for (Mode m : {Mode::ReadinessFirst, Mode::Strict, Mode::BoundedWait}) {
      SimOptions so;
      so.mode = m;
      so.duration = go.duration;
      so.comm.latency_s = go.link_s;
      SimResult r = simulate(h, so);
      EXPECT_TRUE(r.complete) << "trial " << trial << ": " << r.stuck;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 180);
}

TEST(GreedySchedule, FillsBubblesWithW) {
  // Equal costs on a linear pipeline with the 1F1B caps: the greedy order is
  // never longer than 1F1B's, and shorter than GPipe's memory-equal order.
  HintParams hp;
  hp.stages = 4;
  hp.microbatches = 8;
  hp.split = 1;
  const Hint one = make_hint("1f1b", hp);
  Hint h;
  h.graph = one.graph;
  GreedyOptions go;
  go.cap = one.peak_inflight();
  go.duration = [](int) { return 1e-3; };
  greedy_schedule(h, go);
  SimOptions so;
  so.mode = Mode::Strict;
  so.duration = go.duration;
  const double greedy = simulate(h, so).makespan, ofb = simulate(one, so).makespan;
  EXPECT_LT(greedy, ofb * 0.95);
  const std::vector<int> peak = h.peak_inflight();
  for (size_t d = 0; d < peak.size(); ++d) EXPECT_LE(peak[d], go.cap[d]) << "device " << d;
}

}  // namespace rrfp
