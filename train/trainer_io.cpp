#include "train/trainer_io.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <utility>

#include "codelets/cost_model.hpp"
#include "codelets/splitmix.hpp"
#include "hints/csv.hpp"
#include "sim/json_file.hpp"

namespace rrfp::train {

void check_options(const TrainOptions& o) {
  if (o.model != "gpt-tiny" && o.model != "gpt-small" && o.model != "mm-tiny")
    throw SpecError(fmt::format("unknown model '{}' (known: gpt-tiny, gpt-small, mm-tiny)", o.model));
  if (o.model == "mm-tiny" && !o.data_path.empty())
    throw SpecError("--data applies to gpt-tiny; mm-tiny draws its own images and captions");
  if (o.model == "mm-tiny" && o.seq_len_dist != "fixed")
    throw SpecError("--seq-len-dist applies to gpt-tiny; mm-tiny's captions have a fixed length (its images vary)");
  o.gpt.validate();
  auto positive = [](int v, const char* flag) {
    if (v < 1) throw SpecError(fmt::format("{} must be at least 1, got {}", flag, v));
  };
  positive(o.stages, "--stages");
  positive(o.microbatches, "--microbatches");
  positive(o.micro_batch_size, "--micro-batch-size");
  positive(o.steps, "--steps");
  if (o.batch_size < 0) throw SpecError("--batch-size must be positive");
  if (o.batch_size > 0 && o.batch_size % o.microbatches != 0)
    throw SpecError(fmt::format("--batch-size {} cannot be divided into {} microbatches of equal size",
                                o.batch_size, o.microbatches));
  if (o.checkpoint_every < 0) throw SpecError("--checkpoint-every must not be negative");
  if (o.eval_every < 0) throw SpecError("--eval-every must not be negative");
  if (o.eval_microbatches < 1) throw SpecError("--eval-microbatches must be at least 1");
  // Sequences a step or an evaluation draws, counted in int further on.
  const long long per_microbatch = o.batch_size > 0 ? o.batch_size / o.microbatches : o.micro_batch_size;
  for (const auto& [n, flag] : {std::pair{o.microbatches, "--microbatches"}, {o.eval_microbatches, "--eval-microbatches"}})
    if (n * per_microbatch > (1 << 24))
      throw SpecError(fmt::format("{} {} x {} sequences a microbatch is over 2^24 sequences: too large", flag, n,
                                  per_microbatch));
  if (o.target_loss < 0) throw SpecError("--target-loss must be positive");
  if (o.target_loss > 0 && o.eval_every == 0) throw SpecError("--target-loss needs --eval-every K (steps between evaluations)");
  if (o.resume && o.checkpoint_dir.empty()) throw SpecError("--resume needs --checkpoint DIR");
  if (o.lr_decay == "constant")  // flags that would change nothing
    for (const auto& [given, flag] : {std::pair{o.lr_decay_steps != 0, "--lr-decay-steps"}, {!std::isnan(o.min_lr), "--min-lr"}})
      if (given) throw SpecError(fmt::format("{} applies to --lr-decay cosine or linear", flag));
  if (o.lr_decay_steps < 0) throw SpecError("--lr-decay-steps must be at least 1 (0 or none: --steps)");
  lr_schedule(o).check();
  if (!(o.clip_grad >= 0) || std::isinf(o.clip_grad))
    throw SpecError(fmt::format("--clip-grad {} must be a norm >= 0 (0: no clipping)", o.clip_grad));
  if (o.executor != "starpu" && o.executor != "replay" && o.executor != "plain")
    throw SpecError(fmt::format("unknown executor '{}' (known: starpu, replay, plain)", o.executor));
  if (o.multi_rank && o.executor != "starpu")
    throw SpecError(fmt::format("--executor {} runs in one process: under a launcher every rank would train the "
                                "whole model alone (drop --executor, or start one process)",
                                o.executor));
  positive(o.tensor_parallel, "--tensor-parallel");
  if (o.tensor_parallel > 1 && o.executor != "starpu")
    throw SpecError("--tensor-parallel needs the StarPU executor: its members run concurrently");
  if (!o.gpt.mlp_widths.empty() && o.model == "mm-tiny")
    throw SpecError("--mlp-widths applies to gpt-tiny and gpt-small (mm-tiny's blocks have the default width)");
  if (o.inflight_slack < 0 || o.inflight_slack > 1000000)
    throw SpecError(fmt::format("the in-flight slack {} must be in [0, 1000000]", o.inflight_slack));
  check_link_delay(o.link_ms, o.link_jitter);
  if (o.cuda && o.executor == "replay") throw SpecError("--cuda runs with the starpu or plain executor, not replay");
  // Its all-reduces run inside autograd nodes, which LibTorch runs on one
  // thread per GPU: two members of a group in one process would each block
  // it waiting for the other (docs/gpu.md). One member per process is safe.
  if (o.cuda && o.tensor_parallel > 1 && !(o.multi_rank && o.devices_per_rank == 1))
    throw SpecError("--cuda with --tensor-parallel needs one device per rank under mpirun (--devices-per-rank 1): "
                    "members of a group in one process would block each other on their GPU's autograd thread "
                    "(docs/gpu.md)");
  if (o.link_ms > 0 && o.executor != "starpu")
    throw SpecError("--link-ms needs the StarPU executor (the delay is a link task)");
  if (!o.trace_path.empty() && o.executor == "plain")
    throw SpecError("--trace records the pipeline's tasks; the plain loop (--executor plain) has none");
}

std::function<double(int, int)> link_delays(const TrainOptions& o, int step) {
  if (!(o.link_ms > 0)) return {};
  const double ms = o.link_ms, jitter = o.link_jitter;
  const std::uint64_t base = (o.seed * 0x1000003ULL + static_cast<std::uint64_t>(step)) * 0x100000001b3ULL;
  return [ms, jitter, base](int task, int k) {
    const std::uint64_t key = base + static_cast<std::uint64_t>(task) * 8 + static_cast<std::uint64_t>(k);
    const double u = static_cast<double>(splitmix64(key) >> 11) * 0x1.0p-53;
    return ms * (1 + jitter * (2 * u - 1)) * 1e-3;
  };
}

LrSchedule lr_schedule(const TrainOptions& o) {
  LrSchedule s;
  s.peak = o.lr;
  s.warmup = o.lr_warmup;
  s.decay = o.lr_decay;
  s.decay_updates = o.lr_decay_steps > 0 ? o.lr_decay_steps : o.steps;
  s.min_lr = std::isnan(o.min_lr) ? o.lr / 10 : o.min_lr;
  return s;
}

static nlohmann::json lr_schedule_json(const TrainOptions& o) {
  const LrSchedule s = lr_schedule(o);
  nlohmann::json j = {{"peak", s.peak}, {"warmup_steps", s.warmup}, {"decay", s.decay}};
  if (s.decay != "constant") {  // the decay's end and floor apply to a decay only
    j["decay_steps"] = s.decay_updates;
    j["min_lr"] = s.min_lr;
  }
  return j;
}

nlohmann::json gpt_json(const GptConfig& c) {
  nlohmann::json j = {
      {"vocab", c.vocab}, {"d_model", c.d_model}, {"heads", c.heads}, {"layers", c.layers}, {"seq_len", c.seq_len}};
  if (!c.uniform_mlp()) j["mlp_widths"] = c.mlp_widths;  // the default widths spelled out are the default model
  return j;
}

CkptTensor to_ckpt(const std::string& name, const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU).contiguous();  // --cuda: the model lives on the GPU
  CkptTensor out{name, c.sizes().vec(), {}};
  out.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  return out;
}

void from_ckpt(const Checkpoint& c, const std::string& name, torch::Tensor& t, const std::string& where) {
  const CkptTensor* ct = c.find(name);
  if (!ct || ct->shape != t.sizes().vec())
    throw CheckpointError(fmt::format("checkpoint '{}' does not match this model: tensor '{}' {}", where, name,
                                      ct ? "has another shape" : "is missing"));
  torch::NoGradGuard g;
  t.copy_(torch::from_blob(const_cast<float*>(ct->data.data()), ct->shape, torch::kFloat32));
}


nlohmann::json identity(const TrainOptions& o, int model_stages, int b) {
  nlohmann::json j = {{"model", o.model},       {"gpt", gpt_json(o.gpt)},  {"stages", o.stages},
                      {"model_stages", model_stages}, {"microbatches", o.microbatches}, {"micro_batch_size", b}};
  // The seed draws the generated corpus and mm-tiny's data: another one
  // would continue the run on other data.
  j["seed"] = o.seed;
  if (o.model == "mm-tiny") j["enc_layers"] = o.enc_layers;
  if (o.seq_len_dist != "fixed") j["seq_len_dist"] = o.seq_len_dist;
  if (!o.partition.empty()) j["partition"] = o.partition;
  return j;
}

void check_identity(const nlohmann::json& want, const nlohmann::json& meta, const std::string& where) {
  auto refuse = [&](const std::string& key) {
    throw CheckpointError(fmt::format("checkpoint '{}' was written for {} = {}, this run has {} = {}", where, key,
                                      meta.contains(key) ? meta[key].dump() : "nothing", key,
                                      want.contains(key) ? want[key].dump() : "nothing"));
  };
  // The model first: its other fields (enc_layers, sizes) follow from it.
  if (want.contains("model") && (!meta.contains("model") || meta["model"] != want["model"])) refuse("model");
  for (auto it = want.begin(); it != want.end(); ++it)
    if (!meta.contains(it.key()) || meta[it.key()] != it.value()) refuse(it.key());
  // Both ways: a checkpoint of an asynchronous run, of a held-out split or
  // of a data file must not be resumed by a run without them.
  static const std::set<std::string> state = {"format", "step", "adam_steps", "sampler"};  // Impl::save
  for (auto it = meta.begin(); it != meta.end(); ++it)
    if (!want.contains(it.key()) && !state.count(it.key())) refuse(it.key());
}

nlohmann::json rank_agreement(const TrainOptions& o, const Hint& hint, const nlohmann::json& ident) {
  nlohmann::json j = ident;
  // The schedule as resolved, not as typed: two plans or CSVs of one name
  // and different orders do not agree.
  j["order"] = csv_rows(hint);
  j["steps"] = o.steps;
  j["lr"] = lr_schedule_json(o);
  j["clip_grad"] = o.clip_grad;
  j["deterministic"] = o.deterministic;
  j["checkpointing"] = {!o.checkpoint_dir.empty(), o.checkpoint_every, o.resume};
  j["cuda"] = o.cuda;
  j["devices_per_rank"] = o.devices_per_rank;
  j["ordered_channels"] = o.ordered_channels;
  j["tensor_parallel"] = o.tensor_parallel;
  j["data_parallel"] = o.data_parallel;
  j["async"] = {o.async_mode, o.directions, o.async_window};
  j["eval"] = {o.eval_every, o.eval_microbatches, o.target_loss};
  j["link"] = {o.link_ms, o.link_jitter};
  return j;
}

void write_train_json(const std::string& path, const TrainOptions& o, const TrainResult& res, int b) {
  const LrSchedule schedule = lr_schedule(o);
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& r : res.steps) {
    steps.push_back({{"step", r.step},
                     {"loss", r.loss},  // a float widened exactly: round-trips
                     {"tokens_per_s", r.tokens_per_s},
                     {"step_s", r.step_s},
                     {"bubble_ratio", r.bubble_ratio},
                     {"busy_s", r.busy_s},
                     {"peak_activation_bytes", r.peak_activation_bytes},
                     {"peak_activation_bytes_per_stage", r.peak_activation_per_stage},
                     {"peak_activation_bytes_per_device", r.peak_activation_per_device}});
    steps.back()["tokens"] = r.tokens;
    steps.back()["lr"] = schedule.at(r.step);  // the rate of this step's updates
    if (r.val_loss >= 0) steps.back()["val_loss"] = r.val_loss;
    if (r.grad_norm >= 0) steps.back()["grad_norm"] = r.grad_norm;
    if (!r.stage_grad_norm.empty()) steps.back()["stage_grad_norm"] = r.stage_grad_norm;
    if (!r.drift_max.empty()) {
      steps.back()["version_drift_max"] = r.drift_max;
      steps.back()["version_drift_mean"] = r.drift_mean;
      steps.back()["version_drift_bound"] = r.drift_bound;
      if (o.deterministic) steps.back()["late_forwards"] = r.late_forwards;
    }
  }
  nlohmann::json j = {{"model", o.model},
                      {"policy", res.policy},
                      {"executor", o.executor},
                      {"hint", o.hint},
                      {"stages", o.stages},
                      {"model_stages", res.model_stages},
                      {"microbatches", o.microbatches},
                      {"micro_batch_size", b},
                      {"deterministic", o.deterministic},
                      {"tensor_parallel", o.tensor_parallel},
                      {"data_parallel", o.data_parallel},
                      {"grad_buffer_bytes", res.grad_buffer_bytes},
                      {"lr", lr_schedule_json(o)},
                      {"steps", steps}};
  if (o.clip_grad > 0) j["clip_grad"] = {{"max_norm", o.clip_grad}, {"norm", o.async_mode.empty() ? "model" : "stage"}};
  if (o.target_loss > 0) {
    // Not reached: null, not a made-up step 0 or 0 s; the run's totals are in its steps.
    const auto when = [&](auto v) { return res.target.reached ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["target"] = {{"loss", res.target.loss}, {"reached", res.target.reached}, {"step", when(res.target.step)},
                   {"seconds", when(res.target.seconds)}, {"tokens", when(res.target.tokens)}};
  }
  if (o.eval_every > 0) j["eval_every"] = o.eval_every;
  if (!res.mirror_reduce.empty()) j["mirror_reduce"] = res.mirror_reduce;  // rank 0's
  if (!o.async_mode.empty()) {
    j["async"] = {{"method", o.async_mode}, {"accumulate", replica_share(o)}, {"window_steps", o.async_window}};
    if (o.async_mode == "amdp") j["async"]["directions"] = o.directions;
    if (o.data_parallel > 1) j["async"]["data_parallel"] = o.data_parallel;
  }
  write_json_file(path, j);
}

}  // namespace rrfp::train
