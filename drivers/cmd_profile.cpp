// rrfp profile: per-layer F, B, W and BW times, activation and weight bytes
// of a model on this machine, written as a profile JSON for rrfp tune and
// for --profile in rrfp sim and rrfp bench.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "drivers/commands.hpp"
#include "drivers/env_config.hpp"
#include "drivers/flags.hpp"
#include "runtime/session.hpp"
#include "sim/profile.hpp"
#include "train/blas.hpp"
#include "train/profile_model.hpp"

namespace rrfp::cli {

void add_profile_command(CLI::App& app) {
  auto o = std::make_shared<train::ProfileOptions>();
  auto out = std::make_shared<std::string>();
  auto widths = std::make_shared<std::string>();
  auto* c = app.add_subcommand("profile", "Measure each layer's F, B, W and BW of a model (for rrfp tune and --profile)");
  train::TrainOptions& m = o->model;
  c->add_option("--model", m.model, "model: gpt-tiny or mm-tiny (gpt-small: gpt-tiny with its --d-model, --heads, "
                                    "--layers and --seq-len)")
      ->check(CLI::IsMember({"gpt-tiny", "mm-tiny"}))
      ->capture_default_str();
  c->add_option("--layers", m.gpt.layers, "transformer blocks")->capture_default_str();
  c->add_option("--d-model", m.gpt.d_model, "model width")->capture_default_str();
  c->add_option("--heads", m.gpt.heads, "attention heads")->capture_default_str();
  c->add_option("--seq-len", m.gpt.seq_len, "tokens per sequence (gpt-tiny)")->capture_default_str();
  c->add_option("--mlp-widths", *widths, "gpt-tiny: MLP hidden width of each block (0: attention only)");
  c->add_option("--enc-layers", m.enc_layers, "vision encoder blocks (mm-tiny)")->capture_default_str();
  c->add_option("--micro-batch-size", m.micro_batch_size, "sequences per microbatch")->capture_default_str();
  c->add_option("--data", m.data_path, "text file (gpt-tiny; default: generated corpus)");
  c->add_option("--seed", m.seed, "seed of weights and data")->capture_default_str();
  c->add_option("--repetitions", o->repetitions, "timed steps (starpu) or microbatches (plain)")->capture_default_str();
  c->add_option("--executor", o->executor,
                "starpu: time every pass inside training steps on --devices CPU workers (as training runs it); "
                "plain: one pass at a time on this thread")
      ->capture_default_str();
  c->add_option("--devices", o->devices, "starpu: CPU workers the layers are dealt to (the devices you tune for, "
                                         "up to the cores)")
      ->capture_default_str();
  c->add_option("--microbatches", o->microbatches, "starpu: microbatches a step")->capture_default_str();
  c->add_option("--tensor-parallel", m.tensor_parallel,
                "starpu: measure every device as a group of T workers (Megatron blocks; a member's "
                "passes with their all-reduces), for rrfp tune to search that degree")
      ->capture_default_str();
  c->add_option("-o,--output", *out, "write the profile JSON here")->required();
  c->callback([c, o, out, widths] {
    refuse_train_fault_env("rrfp profile", "");
    // Each would change nothing where it does not apply: refused, not ignored.
    const bool mm = o->model.model == "mm-tiny";
    for (const char* flag : {"--seq-len", "--mlp-widths", "--data"})
      if (mm && c->count(flag) > 0) throw SpecError(fmt::format("{} applies to gpt-tiny, not mm-tiny", flag));
    if (!mm && c->count("--enc-layers") > 0) throw SpecError("--enc-layers applies to mm-tiny (its vision encoder)");
    if (o->executor == "plain")
      for (const char* flag : {"--devices", "--microbatches", "--tensor-parallel"})
        if (c->count(flag) > 0) throw SpecError(fmt::format("{} applies to --executor starpu", flag));
    if (!widths->empty()) o->model.gpt.mlp_widths = train::parse_int_list(*widths, "--mlp-widths");
    require_output_dir(*out, "-o");
    if (o->executor == "starpu" && o->devices > max_cpu_workers() / std::max(1, o->model.tensor_parallel))
      throw SpecError(fmt::format("--devices {} x --tensor-parallel {}: one StarPU CPU worker per member, at "
                                  "most {} here",
                                  o->devices, o->model.tensor_parallel, max_cpu_workers()));
    fmt::print("blas: {}, one thread per worker\n", train::blas_in_use().describe());
    const ModelProfile p = train::profile_model(*o, [](const std::string& line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    });
    write_profile(*out, p);
    fmt::print("{:<10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}\n", "layer", "F ms", "B ms", "W ms", "BW ms", "act KiB",
               "weight KiB");
    for (const LayerProfile& l : p.layers)
      fmt::print("{:<10} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.1f} {:>10.1f}\n", l.name, l.f.mean_s * 1e3,
                 l.b.mean_s * 1e3, l.w.mean_s * 1e3, l.bw.mean_s * 1e3, l.activation_bytes / 1024,
                 l.weight_bytes / 1024);
    fmt::print("wrote {}\n", *out);
  });
}

}  // namespace rrfp::cli
