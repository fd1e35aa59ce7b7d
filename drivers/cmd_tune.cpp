// rrfp tune: search partition, placement and schedule of a profiled model on
// the simulator under a memory limit, and write the best plan (docs/tuner.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "drivers/commands.hpp"
#include "drivers/flags.hpp"
#include "sim/tuner.hpp"

namespace rrfp::cli {

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  auto profile = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  auto policy = std::make_shared<std::string>("rrfp-wait");
  auto placements = std::make_shared<std::string>(), schedules = std::make_shared<std::string>();
  auto memory_mb = std::make_shared<double>(0), latency_ms = std::make_shared<double>(0);
  auto bandwidth = std::make_shared<double>(0);
  auto quiet = std::make_shared<bool>(false);
  auto data_parallel = std::make_shared<std::string>();
  auto mirror_reduce = std::make_shared<std::string>("overlap");
  auto* c = app.add_subcommand("tune", "Co-optimise partition, placement and schedule of a profiled model on the "
                                       "simulator; write the plan");
  c->add_option("--profile", *profile,
                "the model's profile (rrfp profile -o FILE); comma-separated, one per tensor-parallel degree "
                "(rrfp profile --tensor-parallel T), to search that degree too")
      ->required();
  c->add_option("--devices", o->devices,
                "devices (workers) in all: split into replicas by --data-parallel and into groups by a profile's "
                "tensor-parallel degree")
      ->capture_default_str();
  c->add_option("--microbatches", o->microbatches, "microbatches per step (all replicas')")->capture_default_str();
  c->add_option("--data-parallel", *data_parallel,
                "data-parallel degrees to search, comma-separated, or 'auto' (every one dividing --devices and "
                "--microbatches): D replicas of a --devices/D pipeline, --microbatches/D each; default 1");
  c->add_option("--memory-mb", *memory_mb,
                "per device (a member, for a profile of tensor-parallel groups): activation peak + 4 x weights "
                "(weights, gradients, AdamW moments) may not exceed this (MiB; 0 = no limit)");
  c->add_option("--latency-ms", *latency_ms, "per-message link latency (ms)");
  c->add_option("--bandwidth-gbps", *bandwidth, "link bandwidth (Gbit/s); 0 = infinite");
  c->add_option("--link-ms", o->objective.link_ms,
                "extra delay of every message between devices (ms), as rrfp train --link-ms");
  c->add_option("--mirror-reduce", *mirror_reduce,
                "how stage copies (replicas, Chimera's directions) reduce, as rrfp train under mpirun: overlap (each "
                "stage from its own last pass) or after-graph (after every pass, one stage after another)")
      ->capture_default_str();
  c->add_option("--policy", *policy, "the policy the plan is simulated under: rrfp-wait, rrfp or rrfp-fixed")
      ->capture_default_str();
  c->add_option("--inflight-slack", o->objective.inflight_slack, "extra in-flight microbatches, as the runtime's");
  c->add_option("--placements", *placements,
                "comma-separated: linear, interleaved:V, vshape, bidirectional (Chimera), bidirectional-asym "
                "(chimera-asym: each direction cuts the layers at its own points); default: all, V=2, the "
                "bidirectional ones on an even device count");
  c->add_option("--schedules", *schedules,
                "comma-separated subset of gpipe, 1f1b, zb-h1, zb-h2, interleaved-1f1b, zbv, chimera, chimera-asym, greedy, "
                "greedy-wide");
  c->add_option("--seeds", o->objective.seeds, "draws of the stages' measured spread the predicted step averages")
      ->capture_default_str();
  c->add_option("--max-moves", o->max_moves, "block moves per placement and schedule")->capture_default_str();
  c->add_flag("--quiet", *quiet, "only the result");
  c->add_option("-o,--output", *out, "write the plan JSON here")->required();
  c->callback([=] {
    if (*memory_mb < 0) throw SpecError(fmt::format("--memory-mb {} must not be negative (0: no limit)", *memory_mb));
    if (*latency_ms < 0) throw SpecError(fmt::format("--latency-ms {} must not be negative", *latency_ms));
    check_link_gbps(*bandwidth, "--bandwidth-gbps");
    o->memory_bytes = *memory_mb * 1048576;
    o->objective.latency_s = *latency_ms * 1e-3;
    o->objective.bandwidth_Bps = *bandwidth * 1e9 / 8;
    o->objective.mode = parse_mode(*policy);
    o->objective.mirror_after_graph = mirror_after_graph(*mirror_reduce);
    if (!placements->empty()) o->placements = split_list(*placements, "--placements");
    for (size_t i = 0; i < o->placements.size(); ++i)  // each placement once: a repeat would be searched twice
      for (size_t j = 0; j < i; ++j)
        if (o->placements[i] == o->placements[j])
          throw SpecError(fmt::format("--placements names '{}' twice", o->placements[i]));
    if (!schedules->empty()) o->schedules = split_list(*schedules, "--schedules");
    if (*data_parallel == "auto") {
      if (o->devices < 1 || o->microbatches < 1)
        throw SpecError("--devices and --microbatches must be at least 1");
      o->data_parallel = data_parallel_degrees(o->devices, o->microbatches);
    } else if (!data_parallel->empty()) {
      o->data_parallel = train::parse_int_list(*data_parallel, "--data-parallel");
      for (size_t i = 0; i < o->data_parallel.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (o->data_parallel[i] == o->data_parallel[j])
            throw SpecError(fmt::format("--data-parallel names {} twice", o->data_parallel[i]));
    }
    require_output_dir(*out, "-o");
    if (!*quiet)
      o->log = [](const std::string& line) {
        fmt::print("{}\n", line);
        std::fflush(stdout);
      };
    std::vector<ModelProfile> profiles;
    for (const std::string& path : split_list(*profile, "--profile")) {
      std::error_code ec;  // the plan would replace the measurements it was tuned from
      if (path == *out || std::filesystem::equivalent(path, *out, ec))
        throw SpecError(fmt::format("-o {} is the profile it reads (--profile): write the plan elsewhere", *out));
      profiles.push_back(read_profile(path));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const Plan p = tune_profiles(profiles, *o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_plan(*out, p);
    // Where a replica runs: devices, or groups of tensor-parallel members.
    const std::string on =
        p.tensor_parallel > 1
            ? fmt::format("{} group{} of {} tensor-parallel members ({} devices)", p.devices, p.devices > 1 ? "s" : "",
                          p.tensor_parallel, p.devices * p.tensor_parallel)
            : fmt::format("{} device{}", p.devices, p.devices > 1 ? "s" : "");
    if (p.data_parallel > 1)
      fmt::print("plan: {} replicas of {} {} partition {} on {} each, {} microbatches each\n", p.data_parallel,
                 p.placement, p.schedule, fmt::join(p.counts, ","), on, p.microbatches);
    else
      fmt::print("plan: {} {} partition {} on {}, {} microbatches\n", p.placement, p.schedule,
                 fmt::join(p.counts, ","), on, p.microbatches);
    std::vector<std::string> mem;
    for (double m : p.memory_bytes) mem.push_back(fmt::format("{:.2f}", m / 1048576));
    fmt::print("predicted step {:.3f} ms under {}; memory per {} {} MiB{}\n", p.predicted_step_s * 1e3,
               p.policy, p.tensor_parallel > 1 ? "member" : "device", fmt::join(mem, " "),
               p.memory_limit_bytes > 0 ? fmt::format(" (limit {:.2f})", p.memory_limit_bytes / 1048576) : "");
    std::set<std::pair<int, int>> degrees;  // (tensor, data) parallel: the log holds every degree's pairs
    for (const auto& t : p.tried) degrees.emplace(t.value("tensor_parallel", 1), t.value("data_parallel", 1));
    fmt::print("searched {} placement/schedule pairs{} in {:.1f} s; wrote {}\n", p.tried.size(),
               degrees.size() > 1 ? fmt::format(" over {} parallel degrees", degrees.size()) : "", took, *out);
  });
}

}  // namespace rrfp::cli
