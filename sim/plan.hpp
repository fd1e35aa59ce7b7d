// A tuned plan (`rrfp tune -o PLAN`): the partition of a profiled model into
// model stages, their placement on devices, the hint (a PyTorch-style CSV),
// and what the simulator predicted for it. `rrfp sim --plan` and `rrfp train
// --plan` run it. Pure C++.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "sim/profile.hpp"
#include "sim/scenario.hpp"

namespace rrfp {

// What `rrfp tune` accepts and a plan file is read back with: seeds of the
// prediction, and in-flight slack.
inline constexpr int kMaxPlanSeeds = 1000;
inline constexpr int kMaxPlanSlack = 100000;
inline constexpr int kMaxPlanReplicas = 4096;
// Bytes, seconds and milliseconds a plan may hold: far beyond any real one.
inline constexpr double kMaxPlanQuantity = 1e18;

struct Plan {
  std::string source;           // the file, for messages
  std::string model;            // the profile's model and config
  nlohmann::json config;
  int micro_batch_size = 1;
  std::string profile;          // the profile it was tuned on
  int devices = 1, microbatches = 1;  // one replica's
  int data_parallel = 1;        // replicas of that pipeline (devices x data_parallel in all)
  // Members per device (a tensor-parallel group; the profile's): a device
  // of the plan is T workers, devices x data_parallel x T in all.
  int tensor_parallel = 1;
  std::vector<int> counts;      // blocks per model stage
  std::string placement;        // linear | interleaved:V | vshape | bidirectional | bidirectional-asym
  std::vector<int> stage_device;
  std::string schedule;         // the zoo hint it came from, or "greedy"
  std::string policy;           // simulated under this policy
  int inflight_slack = 0;
  std::string csv;              // the hint
  double predicted_step_s = 0;
  double memory_limit_bytes = 0;      // 0: none
  std::vector<double> memory_bytes;   // per device: activation peak + kStateCopies x weights
  StageCosts costs;             // per model stage, what the prediction used
  double latency_s = 0, bandwidth_Bps = 0, link_ms = 0;  // the link it was tuned for (0 bandwidth: infinite)
  bool mirror_after_graph = false;  // stage copies reduced after the graph (`rrfp tune --mirror-reduce`)
  int seeds = 5;                // predicted_step_s: the mean over this many seeds of the stages' spread
  nlohmann::json tried = nlohmann::json::array();        // the tuner's log
};

// Two pipelines in opposite directions (Chimera, or its asymmetric
// variant): the plan names its zoo hint instead of a CSV.
inline bool bidirectional_placement(const std::string& placement) {
  return placement == "bidirectional" || placement == "bidirectional-asym";
}

nlohmann::json plan_json(const Plan& p);
// Throws SpecError naming the file and the problem; checks that the hint
// matches the partition, the placement and the device count.
Plan parse_plan(const nlohmann::json& j, const std::string& source);
Plan read_plan(const std::string& path);
void write_plan(const std::string& path, const Plan& p);  // atomically

// The plan's hint, checked against its stages, devices and microbatches.
Hint plan_hint(const Plan& p);

// How many replicas of the plan's pipeline a run with --data-parallel
// `requested` runs: the plan's own degree when the flag is 1 (its default:
// 1 means "the plan's", not "one pipeline"), the flag's when the plan has
// one replica. Throws SpecError when both are above 1 and differ, or when
// `requested` < 1.
int plan_replicas(const Plan& p, int requested);

// How many members each device of the plan has under --tensor-parallel
// `requested`, as plan_replicas: the plan's when the flag is 1 (its
// default), the flag's when the plan has one member. Throws SpecError when
// both are above 1 and differ, or when `requested` < 1.
int plan_members(const Plan& p, int requested);

// What a step is predicted from: the policy, the link, and how many seeds
// of the stages' spread (StageCosts::sigma) the prediction averages.
struct Objective {
  Mode mode = Mode::BoundedWait;
  int inflight_slack = 0;
  double latency_s = 0, bandwidth_Bps = 0, link_ms = 0;  // 0 bandwidth: infinite
  int seeds = 5;
  // Stage copies reduce after the whole graph (CommModel::mirror_after_graph;
  // `--mirror-reduce after-graph` of rrfp sim and rrfp tune).
  bool mirror_after_graph = false;
  // Per device, enforced as a byte budget (sched/memory_budget.hpp): the
  // activations may take the limit less kStateCopies x the stages'
  // weights. 0: no limit.
  double memory_bytes = 0;
};
struct StepEstimate {
  bool complete = false;
  std::string stuck;            // when !complete
  double step_s = 0;            // mean over the seeds
  std::vector<double> memory;   // per device, the largest over the seeds: activations + kStateCopies x weights
  std::vector<double> busy_s;   // per device, mean over the seeds
};
// One simulated scenario (seed `seed`) of a hint under stage costs.
Scenario cost_scenario(const StageCosts& c, const Objective& o, std::uint64_t seed);
// Per device of `h`: `limit` less kStateCopies x the weights of its stages,
// what its activations may take (negative: the weights alone do not fit).
std::vector<double> activation_budget(const Hint& h, const StageCosts& c, double limit);
// The byte budget (SimOptions::memory_budget) that `rrfp train --plan`
// enforces for o.memory_bytes; empty without a limit, or where the hint's
// own order does not fit it (then no run can keep to the limit).
std::vector<double> enforced_budget(const Hint& h, const StageCosts& c, const Objective& o);
StepEstimate estimate_step(const Hint& h, const StageCosts& c, const Objective& o);
// The objective a plan was tuned under (its link, seeds, policy and slack).
Objective plan_objective(const Plan& p);

}  // namespace rrfp
