// What a training run checks and writes around its steps: the options, the
// run's identity that a checkpoint must match, tensors to and from
// checkpoint records, the tests' injected faults, the emulated link, and
// the --json report.
#pragma once

#include <stdexcept>

#include <functional>

#include <torch/torch.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/fault_hook.hpp"
#include "train/checkpoint.hpp"
#include "sim/profile.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

// SpecError for options no run can have.
void check_options(const TrainOptions& o);
nlohmann::json gpt_json(const GptConfig& c);
using rrfp::canonical_gpt_json;  // sim/profile.hpp
CkptTensor to_ckpt(const std::string& name, const torch::Tensor& t);
// Copies the checkpoint's tensor `name` into `t`; CheckpointError when it is missing or shaped otherwise.
void from_ckpt(const Checkpoint& c, const std::string& name, torch::Tensor& t, const std::string& where);
// The run's identity: a checkpoint is refused unless these agree (`b`: sequences per microbatch).
nlohmann::json identity(const TrainOptions& o, int model_stages, int b);
void check_identity(const nlohmann::json& want, const nlohmann::json& meta, const std::string& where);
// What every rank of one job must agree on: the identity plus the schedule,
// optimizer, checkpointing, evaluation and transport flags. Ranks started
// with different flags would exchange messages of other sizes (StarPU-MPI
// aborts), train on other data silently, or wait for each other forever.
nlohmann::json rank_agreement(const TrainOptions& o, const Hint& hint, const nlohmann::json& ident);
// TrainOptions::fail_task (drivers: RRFP_FAIL_TASK, RRFP_FAIL_STEP) makes
// that task throw, to test that a failing pass stops the run cleanly: the
// PyTorch cell label (1I0 = B, 1B0 = BW) or kind names (1B0 = B, 1BW0);
// opt<s> (e.g. opt1) makes stage s's optimizer step throw. It is installed
// as the executor's task hook only when set.
struct Fault {
  std::string task;
  int step = -1;
  bool hits(const TaskGraph& g, int id, int step) const {
    return (this->step < 0 || step == this->step) && task_matches(g, id, task);
  }
  // Throws the injected failure when task `id` of `g` at `step` is the one named.
  void fail_if_hit(const TaskGraph& g, int id, int step) const {
    if (hits(g, id, step))
      throw std::runtime_error(
          fmt::format("injected failure in task {} at step {} (RRFP_FAIL_TASK)", g.label(id), step));
  }
  bool hits_optimizer(int stage, int step) const {
    return (this->step < 0 || step == this->step) && names_optimizer(stage);
  }
  bool names_optimizer(int stage) const { return !task.empty() && task == fmt::format("opt{}", stage); }
};

// The emulated link of step `step` (TrainOptions::link_ms): a delay per
// (task, input) drawn from the seed, the same on every rank; empty when off.
std::function<double(int task, int k)> link_delays(const TrainOptions& o, int step);
// The --json report of a finished run.
void write_train_json(const std::string& path, const TrainOptions& o, const TrainResult& res, int b);

}  // namespace rrfp::train
