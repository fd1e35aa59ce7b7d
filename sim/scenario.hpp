// One simulated run of the synthetic workload: the runtime's seeded cost
// model (codelets/cost_model.hpp) drives the simulator, so a seed gives the
// same durations in `rrfp sim` and `rrfp bench`.
#pragma once

#include <nlohmann/json.hpp>

#include "codelets/cost_model.hpp"
#include "sim/simulator.hpp"

namespace rrfp {

struct Scenario {
  CostOptions cost;
  CommModel comm;      // latency/bandwidth on top of the cost model's link delays
  MemoryModel memory;
  std::vector<double> memory_budget;  // per device, SimOptions::memory_budget (empty: none)
  Mode mode = Mode::ReadinessFirst;
  int inflight_slack = 0;
  std::vector<int> inflight_cap;  // SimOptions::inflight_cap (empty: the hint's peak + slack)
  WaitRule wait{};  // Mode::BoundedWait
  // Each stage's optimizer update, update_s long, after every update_group
  // of its backwards (0: none): SimOptions::update_s.
  int update_group = 0;
  double update_s = 0;
  int gate_lag = 0;  // SimOptions::gate_lag (AMDP: 2)
};

struct ScenarioResult {
  SimResult sim;
  LowerBound lb;
};

ScenarioResult run_scenario(const Hint& hint, const Scenario& sc);

// The fields `rrfp bench --json` writes, plus the simulator's memory fields.
nlohmann::json scenario_json(const Hint& hint, const Scenario& sc, const ScenarioResult& r);

}  // namespace rrfp
