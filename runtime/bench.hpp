// The synthetic benchmark behind `rrfp bench` and perf/: a hint's graph on
// real StarPU workers whose task bodies sleep for durations drawn in advance
// from the seeded cost model, compared with the lower bound of those
// durations.
#pragma once

#include <nlohmann/json.hpp>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "plot/timeline.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
#include "sim/decision_check.hpp"

namespace rrfp {

// How passes run on CUDA workers (ExecOptions::cuda; gpu/synthetic_pass.hpp
// implements it).
class DevicePasses {
 public:
  virtual ~DevicePasses() = default;
  // Enqueues pass `call` on io.stream: checks the message it reads against
  // in_key's payload, writes out_key's, and holds the stream `seconds`.
  virtual void launch(int call, const TaskIo& io, double seconds, std::uint64_t in_key, std::uint64_t out_key) = 0;
  // Before an iteration: no error anywhere.
  virtual void reset() = 0;
  // After it: per call, the first byte of its input that differed, or -1.
  virtual std::vector<long long> first_bad_byte() const = 0;
};

struct BenchConfig {
  CostOptions cost;
  ExecOptions exec;
  int iterations = 1;  // iteration i draws with seed + i
  // Who runs the graph; empty = execute() (mpi/mpi_executor.hpp has one
  // for StarPU-MPI).
  std::function<ExecResult(const Hint&, const TaskBody&, const ExecOptions&)> executor;
  // Tensor parallelism (exec.tensor_parallel = T > 1): each task's cost is
  // split over T members, and F, B and BW end each of their two halves
  // (attention, MLP) with an all-reduce of their group, as in Megatron.
  // Null: a LocalTpComm (members are workers of this process).
  std::shared_ptr<TpComm> comm;
  DevicePasses* device_passes = nullptr;  // with exec.cuda
  // After each iteration, replay its recorded durations in the simulator
  // and compare its decisions with the policy's (sim/decision_check.hpp;
  // rrfp policies, no tensor parallelism, no per-device caps). noise_s < 0:
  // the run's own dispatch delay.
  bool check_decisions = false;
  double decision_noise_s = -1;
};

// Floats in each synthetic all-reduce.
inline constexpr int kBenchAllreduceFloats = 256;

struct BenchReport {
  std::string policy, hint, variability;
  int stages = 0, devices = 0, microbatches = 0;
  std::uint64_t seed = 0;
  int tasks = 0, iterations = 0;
  std::vector<double> makespans_s, lower_bounds_s;  // per iteration
  // Means over iterations.
  double makespan_s = 0, lower_bound_s = 0, makespan_over_lb = 0, bubble_ratio = 0, critical_path_s = 0;
  std::vector<double> busy_s;         // per device, mean
  std::vector<int> peak_inflight;     // per device, max over iterations
  std::vector<int> inflight_cap;      // per device
  long waits = 0;                     // rrfp-wait: bounded waits, over iterations
  ExecResult last;                    // the last iteration, for traces
  int tensor_parallel = 1;
  // Per iteration, group (device) and member: collective ids in the order
  // the member entered them (runtime/tp_comm.hpp); members of this process.
  std::vector<std::vector<std::vector<std::vector<std::int64_t>>>> collective_logs;
  // Iterations in which every group's members logged identical sequences.
  int collective_orders_identical = 0;
  // Messages whose every byte this process checked against its producer's
  // (runtime/payload.hpp), over all iterations.
  long messages_checked = 0;
  std::size_t message_bytes = 0;
  std::vector<DecisionCheck> decision_checks;  // per iteration, with check_decisions
};

// Sleeps until `seconds` after the call; the synthetic task body.
void sleep_for_seconds(double seconds);

BenchReport run_bench(const Hint& hint, const BenchConfig& cfg);
nlohmann::json to_json(const BenchReport& r);
nlohmann::json decision_checks_json(const BenchReport& r);  // [] without check_decisions
// Every iteration's collective logs with task labels:
// [iteration][group][member] -> ["1F3#0", "1F3#1", "1B2#0", ...].
nlohmann::json collective_logs_json(const Hint& hint, const BenchReport& r);
// One track per device, one slice per task ("2F0"); StarPU's profiling
// times when the run had profiling on, else the executor's own records.
Timeline to_timeline(const Hint& hint, const ExecResult& r, const std::string& title);

}  // namespace rrfp
