// Flags shared by several subcommands (hint selection, the cost model), so
// `rrfp bench`, `rrfp sim` and `rrfp train` spell them the same way.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "codelets/cost_model.hpp"
#include "hints/generators.hpp"
#include "hints/replicate.hpp"
#include "plot/picture_file.hpp"
#include "sim/profile.hpp"
#include "train/config.hpp"

namespace rrfp::cli {

// Checked before a long run, not after it: the directory an output file of
// `flag` goes to exists and is writable. (The write itself still reports
// its own errors, a full disk for one.)
inline void require_output_dir(const std::string& path, const char* flag) {
  if (path.empty()) return;
  std::error_code is_dir_ec;
  if (std::filesystem::is_directory(path, is_dir_ec))
    throw SpecError(fmt::format("{} {}: this is a directory; give a file name", flag, path));
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw SpecError(fmt::format("{} {}: directory '{}' does not exist", flag, path, dir.string()));
  // An existing device or pipe (/dev/stdout) is written in place.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) return;
  // Outputs are written to a file beside the target and renamed over it:
  // make one now, so that a directory we cannot write in (/proc, a
  // read-only mount: access() says yes to root) fails before the work.
  const std::string probe = (dir / fmt::format(".rrfp-probe-{}", ::getpid())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    throw SpecError(fmt::format("{} {}: cannot write in '{}': {}", flag, path, dir.string(),
                                std::system_category().message(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

// Two names of one file (./x and x, a symbolic link, x/../x).
inline std::string output_identity(const std::string& path) {
  std::error_code ec;  // absolute first: weakly_canonical leaves a relative name of no existing file as it is
  const std::filesystem::path a = std::filesystem::absolute(path, ec).lexically_normal();
  const std::filesystem::path p = std::filesystem::weakly_canonical(a, ec);
  return ec ? a.string() : p.string();
}

// Two outputs of one command written to one file: the second would
// silently replace the first. `outputs`: {flag, path}, empty paths unused.
inline void refuse_same_output(const std::vector<std::pair<const char*, std::string>>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!outputs[i].second.empty() && !outputs[j].second.empty() &&
          output_identity(outputs[i].second) == output_identity(outputs[j].second))
        throw SpecError(fmt::format("{} {} and {} {} are one file: one would overwrite the other", outputs[j].first,
                                    outputs[j].second, outputs[i].first, outputs[i].second));
}

// Both, for a command whose outputs are all written by this process.
inline void check_outputs(const std::vector<std::pair<const char*, std::string>>& outputs) {
  refuse_same_output(outputs);
  for (const auto& [flag, path] : outputs) require_output_dir(path, flag);
}

// A picture flag's format (.png or .svg), checked as it is parsed: before
// any work, not when the drawing is written.
inline const CLI::Validator& picture_name() {
  static const CLI::Validator v(
      [](std::string& path) {
        try {
          (void)picture_is_svg(path);
          return std::string();
        } catch (const SpecError& e) {
          return std::string(e.what());
        }
      },
      "", "picture");
  return v;
}

struct HintFlags {
  std::string hint = "1f1b";
  HintParams params;
  bool split = false, fused = false;
  int data_parallel = 1;  // replicas of the hint (hints/replicate.hpp)
  // Set by add_hint_flags: a CSV hint takes the file's value of a flag not given.
  const CLI::Option *stages_opt = nullptr, *microbatches_opt = nullptr, *chunks_opt = nullptr;
  bool is_csv() const { return is_csv_hint(hint); }
  HintParams resolved() const {
    HintParams p = params;
    if (split && fused) throw SpecError("--split and --fused exclude each other");
    if (split) p.split = 1;
    if (fused) p.split = 0;
    if (is_csv()) {
      auto given = [](const CLI::Option* o) { return o && o->count() > 0; };
      if (!given(stages_opt)) p.stages = 0;
      if (!given(microbatches_opt)) p.microbatches = 0;
      if (!given(chunks_opt)) p.chunks = 0;
    }
    return p;
  }
  Hint make() const { return replicate(make_hint(hint, resolved()), data_parallel); }
};

inline void add_hint_flags(CLI::App* app, HintFlags& f, bool hint_required = true) {
  auto* o = app->add_option("--hint", f.hint, "hint name (rrfp hints list) or csv:PATH");
  if (hint_required) o->required();
  else o->capture_default_str();
  f.stages_opt = app->add_option("--stages", f.params.stages, "pipeline devices (p); a CSV hint's own by default")
                     ->capture_default_str();
  f.microbatches_opt =
      app->add_option("--microbatches", f.params.microbatches,
                      "microbatches per iteration (per replica with --data-parallel); a CSV hint's own by default")
          ->capture_default_str();
  f.chunks_opt = app->add_option("--chunks", f.params.chunks, "model stages per device (interleaved hints)");
  app->add_option("--waves", f.params.waves, "waves (hanayo)")->check(CLI::Range(1, 64));
  auto* split = app->add_flag("--split", f.split, "split backward into B (input) and W (weights)");
  app->add_flag("--fused", f.fused, "fused backward (one BW task)")->excludes(split);
  app->add_option("--data-parallel", f.data_parallel,
                  "D replicas of the hint on D x --stages devices, --microbatches each; a stage's copies reduce their "
                  "gradients before its update (docs/data-parallel.md)")
      ->capture_default_str();
}


struct CostFlags {
  std::string cost = "F=1,B=1,W=1";
  std::string variability = "none";
  std::string durations, durations_model;  // a trace of rrfp train, and the model it must be of
  CostOptions opt;
  const CLI::Option* cost_opt = nullptr;  // set by add_cost_flags
  const CLI::Option* unit_opt = nullptr;
  bool link_swept = false;  // `sim sweep --param link-ms` gives --link-jitter its delay
  // --cost and --unit-ms set the synthetic costs: refused where `source`
  // gives every pass's cost instead of being silently ignored.
  void refuse_synthetic_costs(const char* source) const {
    for (const CLI::Option* o : {cost_opt, unit_opt})
      if (o && o->count() > 0)
        throw SpecError(fmt::format("{} gives every pass's cost: drop {}", source, o->get_name()));
  }
  CostOptions resolve() const {
    if (!durations.empty()) refuse_synthetic_costs("--durations");
    // The flag as typed (sim compare scales it per hint afterwards): below
    // a nanosecond a pass is no time at all, and ratios of makespans inf.
    if (!(opt.unit_ms >= 1e-6) || !std::isfinite(opt.unit_ms))
      throw SpecError(fmt::format("--unit-ms {} must be at least 1e-06 (a nanosecond)", opt.unit_ms));
    CostOptions o = opt;
    check_link_delay(o.link_ms, o.link_jitter, !link_swept);
    o.base = parse_cost(cost);
    o.var = parse_variability(variability);
    if (!durations_model.empty() && durations.empty()) throw SpecError("--durations-model needs --durations FILE");
    if (!durations.empty()) {
      auto t = std::make_shared<DurationTrace>(read_duration_trace(durations));
      if (!durations_model.empty() && t->model != durations_model)
        throw SpecError(fmt::format("--durations {}: it is a trace of model '{}', not '{}'", durations, t->model,
                                    durations_model));
      o.durations = std::move(t);
    }
    validate(o);
    return o;
  }
};

// --profile FILE [--partition N,N,...]: a profiled model's costs per stage
// (rrfp profile) instead of --cost; the even split rrfp train uses unless
// --partition gives blocks per model stage.
struct ProfileFlags {
  std::string profile, partition;
  bool given() const { return !profile.empty(); }
  // The stage costs for a pipeline of `stages` model stages.
  StageCosts costs(int stages) const {
    if (!given()) throw SpecError("--partition needs --profile FILE");
    const ModelProfile p = read_profile(profile);
    std::vector<int> counts;
    if (partition.empty()) {
      counts = even_counts(p.model, p.blocks(), stages);
    } else {
      counts = train::parse_int_list(partition, "--partition");  // stage_costs refuses bad counts
      if (static_cast<int>(counts.size()) != stages)
        throw SpecError(fmt::format("--partition has {} stages, the hint {}", counts.size(), stages));
    }
    return stage_costs(p, counts);
  }
  // Applies the costs to a cost model (per-stage means, in ms), in place
  // of the synthetic ones `flags` would give.
  void apply(CostOptions& o, const StageCosts& c, const CostFlags& flags) const {
    flags.refuse_synthetic_costs("--profile");
    o.stage_base = c.cost;
    o.stage_sigma = c.sigma;  // the measured spread, drawn per (stage, microbatch)
    o.unit_ms = 1;
    validate(o);
  }
};

// --mirror-reduce of rrfp sim and rrfp tune: whether stage copies reduce
// after the graph ("after-graph") or beside it ("overlap", or "": not given).
inline bool mirror_after_graph(const std::string& mode) {
  if (!mode.empty() && mode != "overlap" && mode != "after-graph")
    throw SpecError(fmt::format("--mirror-reduce '{}': overlap or after-graph", mode));
  return mode == "after-graph";
}

// "a,b,c" -> {"a", "b", "c"}; SpecError naming `flag` for an empty list or
// an empty item ("a,,b", "a,"), which is more likely a typo than a choice.
inline std::vector<std::string> split_list(const std::string& s, const char* flag) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = std::min(s.find(',', b), s.size());
    if (e == b) throw SpecError(fmt::format("{} '{}' has an empty item", flag, s));
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

inline void add_profile_flags(CLI::App* app, ProfileFlags& f) {
  app->add_option("--profile", f.profile,
                  "per-layer costs of a model (rrfp profile -o FILE) instead of --cost: each stage costs the sum "
                  "of its layers, split evenly as rrfp train does unless --partition is given");
  app->add_option("--partition", f.partition, "with --profile: blocks per model stage, e.g. 1,3");
}

inline void add_cost_flags(CLI::App* app, CostFlags& f) {
  f.cost_opt = app->add_option("--cost", f.cost, "base cost per kind in units, e.g. F=1,B=1,W=1 (split backward) or F=1,BW=2 (fused)")
                   ->capture_default_str();
  f.unit_opt = app->add_option("--unit-ms", f.opt.unit_ms, "milliseconds per cost unit")->capture_default_str();
  app->add_option("--variability", f.variability,
                  "none | lognormal:SIGMA | straggler:STAGE:FACTOR:PROB | multimodal:SIGMA")
      ->capture_default_str();
  app->add_option("--link-ms", f.opt.link_ms, "delay of a transfer between devices (ms)");
  app->add_option("--link-jitter", f.opt.link_jitter, "relative jitter of transfer delays, in [0,1)");
  app->add_option("--seed", f.opt.seed, "seed of the cost model")->capture_default_str();
  app->add_option("--durations", f.durations,
                  "replay the pass durations of a `rrfp train --trace` file (more --stages than the trace's "
                  "resample each stage's recorded distribution); not with --cost, --unit-ms or --variability");
  app->add_option("--durations-model", f.durations_model, "refuse a --durations trace of another model");
}

}  // namespace rrfp::cli
