// `rrfp tune --data-parallel`: the pipeline-by-data-parallel split of the
// devices as a fourth choice beside partition, placement and schedule
// (docs/tuner.md). For each degree D the pipeline of devices/D devices is
// tuned for its share of the step's microbatches, then its D replicas are
// simulated together, so the comparison includes the replicas' gradient
// all-reduce over the link and the memory of holding more stages per device.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hints/replicate.hpp"
#include "sim/tuner.hpp"

namespace rrfp {

std::vector<int> data_parallel_degrees(int devices, int microbatches) {
  std::vector<int> out;
  for (int d = 1; d <= devices; ++d)
    if (devices % d == 0 && microbatches % d == 0) out.push_back(d);
  return out;
}

void check_data_parallel(const TuneOptions& o) {
  for (const int D : o.data_parallel) {
    if (D < 1 || D > kMaxPlanReplicas)
      throw SpecError(fmt::format("--data-parallel {} must be from 1 to {}", D, kMaxPlanReplicas));
    if (o.devices % D != 0 || o.microbatches % D != 0)
      throw SpecError(fmt::format("--data-parallel {} must divide --devices {} and --microbatches {} (each replica "
                                  "takes an equal share of both)",
                                  D, o.devices, o.microbatches));
  }
}

void append_tried(nlohmann::json& to, const nlohmann::json& from, const char* key, int degree) {
  for (nlohmann::json entry : from) {
    entry[key] = degree;
    to.push_back(std::move(entry));
  }
}

Plan tune(const ModelProfile& prof, const TuneOptions& o) {
  if (o.data_parallel.empty()) return tune_pipeline(prof, o);
  check_tune_options(o);  // once: what fails below is a degree that does not fit
  check_data_parallel(o);
  auto say = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  Plan best;
  bool found = false;
  std::vector<std::string> why;  // per degree that did not fit: the error if none did
  nlohmann::json tried = nlohmann::json::array();  // every degree's pairs, each saying its degree
  for (const int D : o.data_parallel) {
    TuneOptions one = o;
    one.devices = o.devices / D;
    one.microbatches = o.microbatches / D;
    one.data_parallel.clear();
    say(fmt::format("data parallel {}: {} replica{} of {} device{}, {} microbatches each", D, D, D > 1 ? "s" : "",
                    one.devices, one.devices > 1 ? "s" : "", one.microbatches));
    Plan p;
    try {
      p = tune_pipeline(prof, one);
    } catch (const SpecError& e) {
      why.push_back(fmt::format("data parallel {}: {}", D, e.what()));
      say(why.back());
      continue;
    }
    p.data_parallel = D;
    append_tried(tried, p.tried, "data_parallel", D);
    if (D > 1) {  // the replicas together: their all-reduce, as `rrfp sim --plan` predicts it
      const StepEstimate e = estimate_step(replicate(plan_hint(p), D), p.costs, plan_objective(p));
      if (!e.complete) {
        why.push_back(fmt::format("data parallel {}: the replicas do not complete ({})", D, e.stuck));
        say(why.back());
        continue;
      }
      p.predicted_step_s = e.step_s;
      // Per device of one replica, the most any replica's counterpart holds
      // (equal today: every replica runs the same order on the same stages).
      for (int d = 0; d < p.devices; ++d)
        for (int r = 0; r < D; ++r) p.memory_bytes[d] = std::max(p.memory_bytes[d], e.memory[r * p.devices + d]);
      const double most = *std::max_element(p.memory_bytes.begin(), p.memory_bytes.end());
      if (o.memory_bytes > 0 && most > o.memory_bytes) {
        why.push_back(fmt::format("data parallel {}: the replicas need {:.1f} MiB on a device", D, most / 1048576));
        say(why.back());
        continue;
      }
    }
    say(fmt::format("data parallel {}: {} {} partition {}: {:.3f} ms a step{}", D, p.placement, p.schedule,
                    fmt::join(p.counts, ","), p.predicted_step_s * 1e3,
                    D > 1 ? " with the replicas' gradient all-reduce" : ""));
    if (!found || p.predicted_step_s < best.predicted_step_s) best = std::move(p), found = true;
  }
  if (!found) throw SpecError(fmt::format("no data-parallel degree fits: {}", fmt::join(why, "; ")));
  best.tried = std::move(tried);
  return best;
}

}  // namespace rrfp
