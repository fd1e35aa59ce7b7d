// `rrfp tune --profile A,B,...`: the tensor-parallel degree as a fifth
// choice beside partition, placement, schedule and the data-parallel split
// (docs/tuner.md). Each profile measured a device as a group of T members
// (`rrfp profile --tensor-parallel T`): its pass times already carry the
// group's all-reduces, so a group is tuned as a device of that profile, on
// devices / T of them. Measured, not modelled: the collectives' cost on
// this machine is what the profile timed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/tuner.hpp"

namespace rrfp {

namespace {

// Two profiles must describe the same model, sizes and micro-batch, at
// different degrees.
void check_pair(const ModelProfile& a, const ModelProfile& b) {
  if (b.model != a.model || !same_model_config(a.config, b.config) || b.micro_batch_size != a.micro_batch_size ||
      b.blocks() != a.blocks())
    throw SpecError(fmt::format("--profile: '{}' is {} {} (micro-batch size {}), '{}' is {} {} (micro-batch size {}); "
                                "tune profiles of one model, one per tensor-parallel degree",
                                a.source, a.model, a.config.dump(), a.micro_batch_size, b.source, b.model,
                                b.config.dump(), b.micro_batch_size));
  // One pass at a time on an idle thread is 25-40% faster than a pass
  // among busy workers (docs/tuner.md): such degrees are not comparable.
  if (!a.executor.empty() && !b.executor.empty() && a.executor != b.executor)
    throw SpecError(fmt::format("--profile: '{}' was measured with --executor {}, '{}' with --executor {}; profile "
                                "every degree the same way",
                                a.source, a.executor, b.source, b.executor));
  // Members share the cores: a group of 2 timed beside one other group is
  // not the group of 2 that runs beside three others.
  if (a.workers > 0 && b.workers > 0 && a.workers != b.workers)
    throw SpecError(fmt::format("--profile: '{}' was measured among {} busy workers, '{}' among {}; profile every "
                                "degree on the same workers (rrfp profile --devices W/T --tensor-parallel T)",
                                a.source, a.workers, b.source, b.workers));
  if (b.tensor_parallel == a.tensor_parallel)
    throw SpecError(fmt::format("--profile: '{}' and '{}' both measured tensor-parallel groups of {}; give one "
                                "profile per degree",
                                a.source, b.source, a.tensor_parallel));
}

}  // namespace

Plan tune_profiles(const std::vector<ModelProfile>& profiles, const TuneOptions& o) {
  if (profiles.empty()) throw SpecError("--profile: no profile given");
  if (profiles.size() == 1 && profiles.front().tensor_parallel == 1) return tune(profiles.front(), o);
  check_tune_options(o);  // once: what fails below is a degree that does not fit
  for (size_t i = 0; i < profiles.size(); ++i)
    for (size_t k = 0; k < i; ++k) check_pair(profiles[k], profiles[i]);
  check_data_parallel(o);  // on all the devices, before any tensor-parallel degree is searched
  for (const ModelProfile& p : profiles)
    if (o.devices % p.tensor_parallel != 0)
      throw SpecError(fmt::format("--devices {}: profile '{}' measured tensor-parallel groups of {}, which must "
                                  "divide the devices",
                                  o.devices, p.source, p.tensor_parallel));
  auto say = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  Plan best;
  bool found = false;
  std::vector<std::string> why;  // per degree that did not fit: the error if none did
  nlohmann::json tried = nlohmann::json::array();  // every degree's pairs, each saying its degree
  for (const ModelProfile& prof : profiles) {
    const int T = prof.tensor_parallel;
    TuneOptions one = o;
    one.devices = o.devices / T;
    one.data_parallel.clear();
    std::vector<int> dropped;
    for (const int D : o.data_parallel)  // the data-parallel degrees this many groups can take
      (one.devices % D == 0 ? one.data_parallel : dropped).push_back(D);
    say(fmt::format("tensor parallel {}: {} {}{}{} ('{}')", T, one.devices,
                    T > 1 ? "group" : "whole device", one.devices > 1 ? "s" : "",
                    T > 1 ? fmt::format(" of {} members", T) : "", prof.source));
    if (!dropped.empty())
      say(fmt::format("tensor parallel {}: data parallel {} left out: {} group{} cannot be split so", T,
                      fmt::join(dropped, ","), one.devices, one.devices > 1 ? "s" : ""));
    if (!o.data_parallel.empty() && one.data_parallel.empty()) {
      why.push_back(fmt::format("tensor parallel {}: no data-parallel degree of {} divides its {} group{}", T,
                                fmt::join(o.data_parallel, ","), one.devices, one.devices > 1 ? "s" : ""));
      say(why.back());
      continue;
    }
    Plan p;
    try {
      p = tune(prof, one);
    } catch (const SpecError& e) {
      why.push_back(fmt::format("tensor parallel {}: {}", T, e.what()));
      say(why.back());
      continue;
    }
    append_tried(tried, p.tried, "tensor_parallel", T);
    say(fmt::format("tensor parallel {}: {}{} {} partition {}: {:.3f} ms a step", T,
                    p.data_parallel > 1 ? fmt::format("{} replicas of ", p.data_parallel) : "", p.placement,
                    p.schedule, fmt::join(p.counts, ","), p.predicted_step_s * 1e3));
    if (!found || p.predicted_step_s < best.predicted_step_s) best = std::move(p), found = true;
  }
  if (!found) throw SpecError(fmt::format("no tensor-parallel degree fits: {}", fmt::join(why, "; ")));
  best.tried = std::move(tried);
  return best;
}

}  // namespace rrfp
