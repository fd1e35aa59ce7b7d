// Seeded synthetic cost model: every task's duration and every cross-device
// transfer delay is drawn before a run starts, so all policies (and the
// simulator) face exactly the same realized durations for one seed.
// Pure C++, no StarPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codelets/duration_trace.hpp"
#include "graph/task_graph.hpp"

namespace rrfp {

// Base cost per kind, in units (scaled by CostOptions::unit_ms).
struct BaseCost {
  double f = 1, b = 1, w = 1;
  double bw = -1;  // fused backward; < 0 means b + w
  bool split_given = false;  // parse_cost read B= or W=
  double of(Kind k) const;
};
// "F=1,B=1,W=1", "F=1,BW=2", any subset; keys case-insensitive.
BaseCost parse_cost(const std::string& spec);

struct Variability {
  enum class Type { None, LogNormal, Straggler, Multimodal };
  Type type = Type::None;
  double sigma = 0;            // lognormal, multimodal
  int stage = 0;               // straggler: model stage slowed
  double factor = 1, prob = 0; // straggler
  std::string spec = "none";   // as given, for reports
};
// A whole string as a finite number, else SpecError "WHAT: 'S' is not a number".
double parse_number(const std::string& s, const std::string& what);
// none | lognormal:SIGMA | straggler:STAGE:FACTOR:PROB | multimodal:SIGMA
Variability parse_variability(const std::string& spec);

struct CostOptions {
  BaseCost base;
  double unit_ms = 1;
  Variability var;
  double link_ms = 0;      // mean delay of an edge that crosses devices
  double link_jitter = 0;  // relative, in [0, 1): uniform in ms*(1 +- jitter)
  std::uint64_t seed = 1;
  // Per model stage, instead of `base` (a `--profile`'s stage costs, in
  // units of unit_ms); empty = `base` on every stage.
  std::vector<BaseCost> stage_base;
  // Per model stage, with stage_base: a profile's spread as the sigma of a
  // mean-one lognormal factor drawn per (stage, microbatch) and shared by
  // its F, B and W (a heavy microbatch is heavy in every pass); empty = none.
  std::vector<double> stage_sigma;
  // Measured durations (`--durations FILE`) instead of base x variability;
  // the link model still applies.
  std::shared_ptr<const DurationTrace> durations;
};
void validate(const CostOptions& o);  // throws SpecError
// For reports: the variability spec, or "durations:PATH" for a trace.
std::string variability_label(const CostOptions& o);

// The longest pass or transfer any input may ask for (a profile, a trace, a
// cost flag, a link latency): an hour is far beyond any real one, and keeps
// sums finite and a bench task's sleep meaningful.
inline constexpr double kMaxTaskSeconds = 3600;
// The slowest link the command line takes (1 kbit/s): below it a step's
// prediction overflows what plan files hold (docs/tuner.md). The simulator
// itself takes any positive bandwidth (tests use abstract units).
inline constexpr double kMinLinkBandwidthBps = 125;
// A link's speed in Gbit/s as the command line and sweeps take it: 0
// (infinite) or from kMinLinkBandwidthBps to 1e9 Gbit/s; throws SpecError
// naming `what` (the flag) otherwise.
void check_link_gbps(double gbps, const std::string& what);
// --link-ms and --link-jitter, as every command takes them: a delay from 0
// to an hour, a jitter in [0, 1) relative to it, and (`jitter_needs_delay`)
// no jitter without a delay, which would change nothing. SpecError otherwise.
void check_link_delay(double link_ms, double jitter, bool jitter_needs_delay = true);

// Realized durations, in seconds.
struct Durations {
  std::vector<double> task_s;   // per task id
  std::vector<double> edge_s;   // per edge (global index into the pred array); 0 on one device
  std::vector<int> edge_off;    // per task: first edge index of its preds, size n+1
  double edge(int task, int k) const { return edge_s[edge_off[task] + k]; }  // k-th pred of task
};

// Draws from (seed, kind, stage, microbatch) alone, so a task has the same
// cost in every graph that contains it (e.g. F costs agree across hints).
Durations draw(const TaskGraph& g, const CostOptions& o);

struct LowerBound {
  double bound = 0;                // max of all below
  double critical_path = 0;        // longest chain incl. transfer delays
  std::vector<double> per_device;  // earliest first start + busy + shortest tail
  std::vector<double> tail;        // per task: the longest chain that must follow its end
};
LowerBound lower_bound(const TaskGraph& g, const Durations& d);

}  // namespace rrfp
