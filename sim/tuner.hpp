// The tuner behind `rrfp tune`: co-optimises the partition of a profiled
// model into stages, their placement on devices and the schedule, with the
// simulator (the runtime's own arbitration core) as the objective and a
// per-device memory limit as the constraint (docs/tuner.md).
//
// For each placement (linear, interleaved with V chunks, V-shape, Chimera's
// bidirectional one and its asymmetric variant) and each
// schedule that fits it (the zoo's hints, and the cost-aware greedy
// generator regenerated for every partition), the loop starts from the
// cost-balanced partition, simulates, takes the device the timeline shows
// busiest, tries moving a block off its heaviest stage to either neighbour,
// and when neither helps every other single-block move; it stops when no
// move shortens the simulated step. The best plan over all wins.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/plan.hpp"
#include "sim/profile.hpp"

namespace rrfp {

struct TuneOptions {
  int devices = 2;
  int microbatches = 8;
  double memory_bytes = 0;      // per device; 0 = no limit
  Objective objective;          // policy, slack, link, seeds of the stages' spread
  // Placements to search: "linear", "interleaved:V", "vshape",
  // "bidirectional", "bidirectional-asym"; empty = all
  // that the model's blocks allow (interleaved with 2 chunks).
  std::vector<std::string> placements;
  // Schedules to search; empty = every one that fits a placement.
  std::vector<std::string> schedules;
  int max_moves = 400;          // per (placement, schedule)
  // Data-parallel degrees to search (tune): each D splits the devices into
  // D replicas of devices/D and the step's microbatches among them; empty
  // = 1 only, a single pipeline on every device.
  std::vector<int> data_parallel;
  std::function<void(const std::string&)> log;  // one line per step of the search
};

// Throws SpecError naming `placement` unless the tuner knows it (the names
// of TuneOptions::placements); `what` says where the name came from.
void check_placement(const std::string& placement, const std::string& what);

// Throws SpecError naming the flag for options no search could take (a
// count below 1, an unknown schedule or placement, bounds a plan file is
// read back with); tune and tune_pipeline check them first.
void check_tune_options(const TuneOptions& opt);

// Throws SpecError when no candidate fits the devices, the blocks or the
// memory limit (the message names the smallest need found). One pipeline
// on opt.devices, for opt.microbatches; opt.data_parallel is not read.
Plan tune_pipeline(const ModelProfile& profile, const TuneOptions& opt);

// tune_pipeline for one replica at each of opt.data_parallel's degrees
// (sim/tune_data_parallel.cpp), each then simulated with its D replicas and
// their gradient all-reduce; the shortest predicted step wins. Throws
// SpecError when a degree does not divide the devices and microbatches, or
// when no degree fits (naming why each did not).
Plan tune(const ModelProfile& profile, const TuneOptions& opt);

// The tensor-parallel degree as a fifth choice
// (sim/tune_tensor_parallel.cpp): one profile of the same model per degree
// T (`rrfp profile --tensor-parallel T`), each searched by tune() on
// opt.devices / T groups with the data-parallel degrees that divide them;
// the shortest predicted step wins. Throws SpecError when the profiles are
// of different models or repeat a degree, when a degree does not divide
// the devices, or when no profile fits (naming why each did not).
Plan tune_profiles(const std::vector<ModelProfile>& profiles, const TuneOptions& opt);

// Throws SpecError naming the first of opt.data_parallel that is out of
// range or does not divide opt.devices and opt.microbatches.
void check_data_parallel(const TuneOptions& opt);

// Appends `from`'s entries (a tune's `tried` log) to `to`, each saying
// `key` = `degree`: the log of a search over degrees keeps every degree's
// pairs, not only the winner's.
void append_tried(nlohmann::json& to, const nlohmann::json& from, const char* key, int degree);

// Every degree that divides both the devices and the microbatches
// (`rrfp tune --data-parallel auto`).
std::vector<int> data_parallel_degrees(int devices, int microbatches);

// A hint on the even partition rrfp train uses without a plan (what the
// tuned plan is compared with).
StepEstimate estimate_even(const ModelProfile& p, const Hint& h, const Objective& o);

// Cost-balanced start: blocks per stage minimising the largest stage's
// F + B + W (its first and last layers included), S stages.
std::vector<int> balanced_counts(const ModelProfile& p, int stages);

// The start of the asymmetric bidirectional search (chimera-asym, 2D-1
// stages): Chimera's balanced cuts for one direction, the other's one block
// later.
std::vector<int> asymmetric_start(const ModelProfile& p, int devices);

}  // namespace rrfp
