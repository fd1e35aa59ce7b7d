// rrfp train: pipeline-parallel training of a LibTorch model, every pass a
// StarPU task; the policy comes from STARPU_SCHED as in `rrfp bench`.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

#include "drivers/commands.hpp"
#include "drivers/env_config.hpp"
#include "drivers/flags.hpp"
#include "drivers/rank_transport_flag.hpp"
#include "graph/pipeline_spec.hpp"
#include "hints/generators.hpp"
#include "mpi/mpi_session.hpp"
#include "train/blas.hpp"
#include "train/trainer.hpp"

namespace rrfp::cli {

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<train::TrainOptions>();
  auto split = std::make_shared<bool>(false), fused = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto widths = std::make_shared<std::string>(), partition = std::make_shared<std::string>();
  auto* c = app.add_subcommand("train", "Train a model (gpt-tiny, mm-tiny) with pipeline parallelism on StarPU");
  // A repeated option takes its last value, so scripts/main.sh ARGS can override its defaults.
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--model", o->model, "model: gpt-tiny, gpt-small (a GPU-sized GPT: docs/gpu.md) or mm-tiny")
      ->capture_default_str();
  c->add_flag("--cuda", o->cuda,
              "the model on a GPU: every device a CUDA worker, each pass on its stream (CUDA builds; docs/gpu.md)");
  auto* stages = c->add_option("--stages", o->stages,
                               "pipeline devices (StarPU CPU workers; per replica with --data-parallel); a CSV "
                               "hint's own by default")
                     ->capture_default_str();
  auto* microbatches =
      c->add_option("--microbatches", o->microbatches,
                    "microbatches per step (per replica with --data-parallel); a CSV hint's own by default")
          ->capture_default_str();
  c->add_option("--micro-batch-size", o->micro_batch_size, "sequences per microbatch")->capture_default_str();
  c->add_option("--batch-size", o->batch_size, "sequences per step, every replica's (instead of --micro-batch-size)");
  c->add_option("--steps", o->steps, "train until this step")->capture_default_str();
  c->add_option("--hint", o->hint, "schedule hint (rrfp hints list)")->capture_default_str();
  auto* chunks = c->add_option("--chunks", o->chunks, "model stages per device (interleaved hints)");
  c->add_flag("--split", *split, "split backward into B (input) and W (weights)");
  c->add_flag("--fused", *fused, "fused backward (one BW task)");
  c->add_option("--data", o->data_path, "text file to train on (default: generated corpus)");
  c->add_option("--lr", o->lr, "AdamW learning rate (the peak, with a schedule)")->capture_default_str();
  c->add_option("--lr-warmup", o->lr_warmup, "steps of linear warm-up to --lr (each stage's own updates under --async)");
  c->add_option("--lr-decay", o->lr_decay, "after the warm-up: constant | cosine | linear decay to --min-lr")
      ->capture_default_str();
  c->add_option("--lr-decay-steps", o->lr_decay_steps, "the step at which the decay reaches --min-lr (default --steps)");
  c->add_option("--min-lr", o->min_lr, "the decay's floor (default --lr / 10)");
  c->add_option("--clip-grad", o->clip_grad,
                 "clip the gradient's L2 norm to this before each update (0: off): the whole model's norm, each "
                 "stage's own under --async")
      ->capture_default_str();
  c->add_option("--seed", o->seed, "seed of weights, corpus and sampling")->capture_default_str();
  c->add_flag("--deterministic", o->deterministic,
              "reduce gradients in microbatch order: bitwise-reproducible losses (--async amdp: every "
              "forward also runs on the weight version its gate waited for, docs/async.md; slower to converge; "
              "--async paci: every forward on the version 1F1B's order gives it, under every policy)");
  c->add_option("--checkpoint", o->checkpoint_dir, "checkpoint directory");
  c->add_option("--checkpoint-every", o->checkpoint_every, "steps between checkpoints (0: at the end)");
  c->add_flag("--resume", o->resume, "continue from the checkpoint in --checkpoint DIR");
  c->add_option("--json", o->json_path, "write the run as JSON");
  c->add_option("--trace", o->trace_path, "write a Chrome trace of every task");
  c->add_option("--executor", o->executor, "starpu | replay (one thread, hint order) | plain (no pipeline)")
      ->capture_default_str();
  c->add_option("--layers", o->gpt.layers, "transformer blocks")->capture_default_str();
  c->add_option("--d-model", o->gpt.d_model, "model width")->capture_default_str();
  c->add_option("--heads", o->gpt.heads, "attention heads")->capture_default_str();
  c->add_option("--seq-len", o->gpt.seq_len, "tokens per sequence (gpt-tiny)")->capture_default_str();
  c->add_option("--seq-len-dist", o->seq_len_dist,
                "gpt-tiny sequence lengths: fixed | uniform:MIN:MAX | lognormal[:MEDIAN[:SIGMA]] | docs (the --data "
                "documents, split at blank lines); microbatches are padded to their longest")
      ->capture_default_str();
  c->add_option("--mlp-widths", *widths,
                "gpt-tiny: MLP hidden width of each block, comma-separated (0: attention only); default 4 x d-model");
  auto* part = c->add_option("--partition", *partition,
                             "blocks per model stage, comma-separated (default: even; the first stage may hold the "
                             "embedding alone and the last the head alone)");
  auto* plan = c->add_option("--plan", o->plan_path,
                             "train a tuned plan (rrfp tune -o PLAN): its partition, placement and hint");
  plan->excludes(part);
  c->add_option("--enc-layers", o->enc_layers, "vision encoder blocks (mm-tiny)")->capture_default_str();
  c->add_option("--tensor-parallel", o->tensor_parallel,
                "split each device's stages over T workers (Megatron column/row-parallel blocks: gpt-tiny's, mm-tiny's "
                "encoder and language blocks)")
      ->capture_default_str();
  c->add_option("--data-parallel", o->data_parallel,
                "D replicas of the pipeline on D x --stages devices, --microbatches each; a stage's copies reduce "
                "their gradients before its update (docs/data-parallel.md)")
      ->capture_default_str();
  c->add_flag("--quiet", *quiet, "no progress lines");
  c->add_option("--devices-per-rank", o->devices_per_rank, "under mpirun/srun: devices per rank (docs/mpi.md)")
      ->capture_default_str();
  auto transport = std::make_shared<std::string>("starpu-mpi");
  auto* transport_flag = add_rank_transport_flag(c, transport.get());
  c->add_option("--mirror-reduce", o->mirror_reduce,
                "under mpirun, stage copies on several ranks (Chimera, --data-parallel): overlap (reduce the "
                "stages' gradients beside the graph, each once this rank's backwards of it are done), after-graph, "
                "or auto (overlap where a rank has cores to spare; the default; docs/mpi.md)")
      ->check(CLI::IsMember({"auto", "overlap", "after-graph"}));
  auto* inflight = c->add_option("--inflight-slack", o->inflight_slack,
                                 "rrfp policies: raise each device's in-flight cap by K (default RRFP_INFLIGHT_SLACK or 0)")
                      ->check(CLI::Range(0, 1000000));
  c->add_option("--async", o->async_mode,
                "train without a flush: paci (1F1B, each stage updates after every --accumulate backwards) or "
                "amdp (--directions pipelines over the devices, one update per stage and step; docs/async.md)");
  auto* accumulate = c->add_option("--accumulate", o->microbatches,
                                   "--async: microbatches per update (one step); sets --microbatches");
  auto* directions = c->add_option("--directions", o->directions,
                "--async amdp: pipelines in different directions, 2 (stages even) or 4 (stages divisible by 4)")
      ->capture_default_str();
  c->add_option("--window", o->async_window, "--async: steps per graph; it drains only at a window's end")
      ->capture_default_str();
  c->add_option("--eval-every", o->eval_every,
                "validation loss every K steps and after the last, on held-out data (gpt-tiny: the corpus's last "
                "tenth, left out of training)");
  c->add_option("--eval-microbatches", o->eval_microbatches, "held-out microbatches per evaluation")
      ->capture_default_str();
  c->add_option("--target-loss", o->target_loss,
                "stop once the validation loss reaches X; reports the training time and tokens it took");
  c->add_option("--link-ms", o->link_ms, "emulated delay of every message between devices (ms; reorders arrivals)")
      ->capture_default_str();
  c->add_option("--link-jitter", o->link_jitter, "relative jitter of --link-ms, in [0,1)")->capture_default_str();
  c->callback([o, transport, transport_flag, split, fused, quiet, stages, microbatches, chunks, inflight, widths, partition, accumulate, directions,
               c] {
    if (*split && *fused) throw SpecError("--split and --fused exclude each other");
    if (directions->count() > 0 && o->async_mode != "amdp") throw SpecError("--directions needs --async amdp");
    if (accumulate->count() > 0 && o->async_mode.empty()) throw SpecError("--accumulate needs --async");
    if (c->count("--window") > 0 && o->async_mode.empty()) throw SpecError("--window needs --async");
    if (o->async_mode == "amdp" && c->count("--hint") > 0)  // "1f1b" is also the default: given, it is a choice
      throw SpecError(fmt::format("--async amdp derives its own multi-directional order; it does not accept the hint '{}'",
                                  o->hint));
    // Given, each of these would change nothing: refused rather than ignored.
    if (c->count("--target-loss") > 0 && !(o->target_loss > 0))
      throw SpecError(fmt::format("--target-loss must be positive, got {}", o->target_loss));
    if (c->count("--eval-microbatches") > 0 && o->eval_every == 0)
      throw SpecError("--eval-microbatches needs --eval-every K (steps between evaluations)");
    if (c->count("--enc-layers") > 0 && o->model != "mm-tiny")
      throw SpecError("--enc-layers applies to mm-tiny (its vision encoder)");
    if (c->count("--seq-len") > 0 && o->model == "mm-tiny")
      throw SpecError("--seq-len applies to gpt-tiny and gpt-small; mm-tiny's captions have a fixed length");
    if (inflight->count() > 0 && o->executor != "starpu")
      throw SpecError(fmt::format("--inflight-slack raises the rrfp policies' caps; --executor {} has none",
                                  o->executor));
    refuse_same_output({{"--json", o->json_path}, {"--trace", o->trace_path},
                        {"--checkpoint", o->checkpoint_dir.empty() ? "" : (std::filesystem::path(o->checkpoint_dir) /
                                                                            "checkpoint.rrfp").string()}});
    if (c->count("--checkpoint-every") > 0 && o->checkpoint_dir.empty())
      throw SpecError("--checkpoint-every needs --checkpoint DIR");
    if (accumulate->count() > 0 && microbatches->count() > 0)
      throw SpecError("--accumulate sets the microbatches per step: drop --microbatches");
    if (c->count("--batch-size") > 0) {  // 0 reads as "not given" further on
      if (o->batch_size < 1) throw SpecError(fmt::format("--batch-size must be at least 1, got {}", o->batch_size));
      if (c->count("--micro-batch-size") > 0)
        throw SpecError("--batch-size sets the micro-batch size (batch / microbatches): drop --micro-batch-size");
    }
    if (o->model == "gpt-small") {  // its sizes, unless given
      const train::GptConfig small = train::gpt_small_config();
      if (c->count("--d-model") == 0) o->gpt.d_model = small.d_model;
      if (c->count("--heads") == 0) o->gpt.heads = small.heads;
      if (c->count("--layers") == 0) o->gpt.layers = small.layers;
      if (c->count("--seq-len") == 0) o->gpt.seq_len = small.seq_len;
      if (c->count("--micro-batch-size") == 0) o->micro_batch_size = train::kGptSmallMicroBatchSize;
      if (microbatches->count() == 0 && accumulate->count() == 0) o->microbatches = train::kGptSmallMicrobatches;
    }
    if (!widths->empty()) o->gpt.mlp_widths = train::parse_int_list(*widths, "--mlp-widths");
    if (!partition->empty()) o->partition = train::parse_int_list(*partition, "--partition");
    if (!o->plan_path.empty())
      for (const char* flag : {"--hint", "--stages", "--microbatches", "--chunks", "--split", "--fused"})
        if (c->count(flag) > 0)
          throw SpecError(fmt::format("--plan fixes the schedule and its dimensions: drop {}", flag));
    if (is_csv_hint(o->hint)) {  // the file's dimensions, unless given (docs/hints.md)
      if (stages->count() == 0) o->stages = 0;
      if (microbatches->count() == 0) o->microbatches = 0;
      if (chunks->count() == 0) o->chunks = 0;
    }
    o->split = *split ? 1 : (*fused ? 0 : -1);
    o->fail_task = fail_task_from_env();
    o->fail_step = fail_step_from_env();
    if (o->fail_step > 0 && o->fail_task.empty())  // a fault test that cannot fail would pass
      throw SpecError("RRFP_FAIL_STEP is set without RRFP_FAIL_TASK: no task would fail");
    if (o->fail_step > o->steps)
      throw SpecError(fmt::format("RRFP_FAIL_STEP={} is past the last step (--steps {}): no task would fail",
                                  o->fail_step, o->steps));
    o->mpi_timeout_s = mpi_timeout_from_env();
    o->multi_rank = launched_under_mpi();
    o->ordered_channels = rank_transport_from_flag(*transport, o->multi_rank, transport_flag) == RankTransportKind::Ordered;
    check_devices_per_rank_flag(o->multi_rank, c->get_option("--devices-per-rank"));
    if (inflight->count() == 0) o->inflight_slack = inflight_slack_from_env();
    if (o->multi_rank && mpi_world().rank != 0) *quiet = true;  // rank 0 reports
    const bool writer = !o->multi_rank || mpi_world().rank == 0;  // rank 0 writes the outputs and checkpoints
    if (writer) require_output_dir(o->json_path, "--json");
    if (writer) require_output_dir(o->trace_path, "--trace");
    // Made and checked writable now, not by the first checkpoint after hours
    // (a resumed run writes there too; a missing one is the resume's error).
    if (writer && !o->checkpoint_dir.empty()) {
      if (!o->resume) {
        std::error_code ec;
        std::filesystem::create_directories(o->checkpoint_dir, ec);
        if (!std::filesystem::is_directory(o->checkpoint_dir))
          throw SpecError(fmt::format("--checkpoint {}: cannot make this directory{}", o->checkpoint_dir,
                                      ec ? ": " + ec.message() : ""));
      }
      if (std::filesystem::is_directory(o->checkpoint_dir))
        require_output_dir((std::filesystem::path(o->checkpoint_dir) / "checkpoint.rrfp").string(), "--checkpoint");
    }
    // The BLAS decides the speed of every pass (docs/training.md): say which one runs.
    if (!*quiet) {
      const train::BlasInfo blas = train::blas_in_use();
      fmt::print("blas: {}, one thread per worker\n", blas.describe());
      if (!blas.optimised())
        fmt::print(stderr, "rrfp: warning: {} is not an optimised BLAS: training runs 15-20x slower "
                           "(scripts/install-deps.sh installs OpenBLAS)\n", blas.library);
    }
    const train::LrSchedule schedule = train::lr_schedule(*o);
    auto res = train::train(*o, [&](const train::StepRecord& r) {
      if (*quiet) return;
      std::string drift;
      if (!r.drift_max.empty())
        drift = fmt::format("  drift {}", *std::max_element(r.drift_max.begin(), r.drift_max.end()));
      if (r.val_loss >= 0) drift += fmt::format("  val {:.4f}", r.val_loss);
      if (!schedule.is_constant()) drift += fmt::format("  lr {:.2e}", schedule.at(r.step));
      if (r.grad_norm >= 0) drift += fmt::format("  gnorm {:.3f}", r.grad_norm);
      else if (!r.stage_grad_norm.empty())  // --async: each stage's own; the largest
        drift += fmt::format("  gnorm {:.3f} (stage max)",
                             *std::max_element(r.stage_grad_norm.begin(), r.stage_grad_norm.end()));
      // The fullest device's activations, what a memory limit bounds; a
      // stage's figure adds up its copies (Chimera's, every replica's).
      // Under mpirun each rank knows only its stages: then the stage's.
      const auto& dev = r.peak_activation_per_device;
      const double peak = dev.empty() ? r.peak_activation_bytes : *std::max_element(dev.begin(), dev.end());
      fmt::print("step {:>4}  loss {:.4f}  {:>8.0f} tok/s  bubble {:.3f}  peak act {:.2f} MiB{}\n", r.step, r.loss,
                 r.tokens_per_s, r.bubble_ratio, peak / 1048576.0, drift);
      std::fflush(stdout);
    });
    if (!*quiet && !res.steps.empty())
      fmt::print("done: {} steps, policy {}, final loss {:.4f}\n", res.steps.size(), res.policy,
                 res.steps.back().loss);
    if (!*quiet && o->target_loss > 0) {
      if (res.target.reached)
        fmt::print("target: validation loss {:.4f} reached at step {} after {:.2f} s and {:.0f} tokens of training\n",
                   o->target_loss, res.target.step, res.target.seconds, res.target.tokens);
      else
        fmt::print("target: validation loss {:.4f} not reached in {} steps\n", o->target_loss, res.steps.size());
    }
  });
}

}  // namespace rrfp::cli
