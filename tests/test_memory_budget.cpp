// The arbiter's byte budget (sched/memory_budget.hpp), through the simulator
// that shares it: under every mode and random durations a device never holds
// more activation bytes than its budget, every hint still completes, and a
// budget below the hint's own peak, or of the wrong size, is refused.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "sched/arbiter.hpp"
#include "sim/simulator.hpp"

using namespace rrfp;

namespace {

// Stage s holds 1 + 3 s units per microbatch: stages that share a device
// (interleaved, V-shape) weigh differently, so a count cap alone does not
// bound the bytes.
std::vector<double> uneven_bytes(const Hint& h) {
  std::vector<double> b;
  for (int s = 0; s < h.spec().stages; ++s) b.push_back(1024.0 * (1 + 3 * s));
  return b;
}

SimOptions random_opts(const Hint& h, Mode m, unsigned seed, bool release_at_w) {
  SimOptions o;
  o.mode = m;
  o.inflight_slack = 2;  // room to reorder forwards: the budget must be what binds
  auto rng = std::make_shared<std::mt19937>(seed);
  auto dur = std::make_shared<std::vector<double>>();
  std::lognormal_distribution<double> draw(0.0, 0.8);
  for (int id = 0; id < h.graph->size(); ++id) dur->push_back(unit_cost(h.graph->task(id).kind) * draw(*rng));
  o.duration = [dur](int id) { return (*dur)[id]; };
  o.memory.activation_bytes = uneven_bytes(h);
  o.memory.release_at_w = release_at_w;
  return o;
}

// The hint's own peak in bytes per device, as the budget computes it.
std::vector<double> hint_peaks(const Hint& h, bool release_at_w) {
  ArbiterOptions a;
  a.memory.stage_bytes = uneven_bytes(h);
  a.memory.device_bytes.assign(h.devices(), 1e18);
  a.memory.release_at_w = release_at_w;
  Arbiter arb(h, a);
  std::vector<double> p;
  for (int d = 0; d < h.devices(); ++d) p.push_back(arb.memory().hint_peak(d));
  return p;
}

std::vector<Hint> hints() {
  return {make_hint("1f1b", {4, 8, 0, -1, 0}), make_hint("zb-h1", {4, 8, 0, -1, 0}),
          make_hint("interleaved-1f1b", {4, 8, 2, 0, 0}), make_hint("zbv", {4, 8, 0, -1, 0})};
}

}  // namespace

TEST(MemoryBudget, NoDeviceExceedsItsBudgetAndEveryHintCompletes) {
  int over_without = 0;
  for (const Hint& h : hints())
    for (bool at_w : {false, true}) {
      const std::vector<double> budget = hint_peaks(h, at_w);  // the tightest budget that can run
      for (Mode m : {Mode::ReadinessFirst, Mode::BoundedWait, Mode::Strict})
        for (unsigned seed = 1; seed <= 25; ++seed) {
          SimOptions o = random_opts(h, m, seed, at_w);
          const SimResult free_run = simulate(h, o);
          for (int d = 0; d < h.devices(); ++d) over_without += free_run.peak_activation_bytes[d] > budget[d] ? 1 : 0;
          o.memory_budget = budget;
          const SimResult r = simulate(h, o);
          const std::string what = h.name + " " + mode_policy_name(m) + " seed " + std::to_string(seed);
          ASSERT_TRUE(r.complete) << what << ": " << r.stuck;
          for (int d = 0; d < h.devices(); ++d)
            EXPECT_LE(r.peak_activation_bytes[d], budget[d]) << what << " device " << d;
        }
    }
  // Teeth: with only the count cap (slack 2), readiness-first holds more.
  EXPECT_GT(over_without, 0);
}

TEST(MemoryBudget, ABudgetBelowTheHintsOwnPeakIsRefusedByDevice) {
  const Hint h = make_hint("interleaved-1f1b", {4, 8, 2, 0, 0});
  std::vector<double> budget = hint_peaks(h, false);
  budget[2] -= 1;
  ArbiterOptions a;
  a.memory.stage_bytes = uneven_bytes(h);
  a.memory.device_bytes = budget;
  try {
    Arbiter arb(h, a);
    FAIL() << "a budget below the hint's peak was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("device 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hint's own"), std::string::npos) << e.what();
  }
}

TEST(MemoryBudget, SizesThatDoNotMatchTheHintAreRefused) {
  const Hint h = make_hint("1f1b", {4, 8, 0, -1, 0});
  ArbiterOptions a;
  a.memory.stage_bytes = {1, 1, 1};  // 3 stages for 4
  a.memory.device_bytes.assign(4, 100);
  EXPECT_THROW(Arbiter(h, a), SpecError);
  a.memory.stage_bytes = {1, 1, 1, -1};
  EXPECT_THROW(Arbiter(h, a), SpecError);
  a.memory.stage_bytes = {1, 1, 1, 1};
  a.memory.device_bytes.assign(3, 100);
  EXPECT_THROW(Arbiter(h, a), SpecError);
  a.memory.device_bytes.clear();  // no budget: sizes are not read
  EXPECT_NO_THROW(Arbiter(h, a));
}
