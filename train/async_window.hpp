// Asynchronous training without a flush (docs/async.md): PACI and AMDP. K
// steps of M microbatches run as one graph of K*M microbatches (PACI: under
// the 1F1B hint; AMDP: its multi-directional order, gen_amdp.hpp),
// with each stage's optimizer update a grouped epilogue after every M of
// its backwards (ExecOptions::epilogue_group): no drain between steps, only
// at the window's end. Every forward and backward records its stage's
// update count when it starts, so the drift each microbatch crossed is
// measured, not assumed.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "mpi/mpi_executor.hpp"
#include "runtime/executor.hpp"
#include "train/amdp_ranks.hpp"
#include "train/model.hpp"
#include "train/pipeline.hpp"
#include "train/trainer.hpp"

namespace rrfp::train {

// PACI's promise for stage s of P with in-flight cap P - s + slack and
// accumulation a: ceil((P - s - 1 + slack) / a) updates between a
// microbatch's forward and its backward.
int paci_drift_bound(int stages, int stage, int accumulate, int slack);

// The method's bound for stage s: PACI's above, or AMDP's one update.
int async_drift_bound(const TrainOptions& o, int stages, int stage);

// Throws SpecError when the options cannot run asynchronously.
void check_async_options(const TrainOptions& o);

class AsyncWindows {
 public:
  // `update(stage, step, grads)`: the stage's optimizer step for `step`.
  using Update = std::function<void(int stage, int step, const std::vector<torch::Tensor>& grads)>;
  // Optional, per pass: `before` runs on the worker ahead of the pass and
  // may throw (RRFP_FAIL_TASK: it fails the run like a throwing pass);
  // `slice` reports every pass and update once it ran, for --trace. A pass
  // is named by its step and its microbatch within that step, as in the
  // synchronous graph ("0F1" of step 3); an update as "opt<stage>".
  struct Hooks {
    std::function<void(int step, Kind kind, int stage, int mb)> before;
    std::function<void(int device, const std::string& name, std::chrono::steady_clock::time_point start,
                       std::chrono::steady_clock::time_point end)>
        slice;
    // Steps whose weights to keep: each stage's, as its update of that
    // step leaves them, for evaluation that does not drain (kept_weights()).
    std::function<bool(int step)> keep_weights;
  };
  AsyncWindows(const TrainOptions& o, const Model& model, int stages, std::vector<std::int64_t> msg_shape);

  // Trains steps first_step .. first_step + K - 1, K = batches.size(), as
  // one graph; `tokens[k]` is step k's token count. `base`: the run's
  // execution options (policy, slack, worker set-up, hooks). One record per step.
  std::vector<StepRecord> run(int first_step, std::vector<std::vector<Microbatch>> batches,
                              const std::vector<double>& tokens, ExecOptions base, const Update& update,
                              const Hooks& hooks = {});
  const std::string& policy() const { return policy_; }  // as the executor reported it
  // After run(): [k][s] is stage s's weights after its update of step
  // first_step + k when Hooks::keep_weights asked for that step (empty
  // otherwise, and for a stage updated on another rank).
  std::vector<std::vector<std::vector<torch::Tensor>>> take_kept_weights() { return std::move(kept_); }

  // Under mpirun: every rank runs each window with `e` (mpi_executor), each
  // its own stages' passes and updates. The `slice` hook then reports every
  // rank's passes after the run, from the merged records (the updates are
  // each rank's own: left out, as in the synchronous trace). The records
  // run() returns hold every rank's losses (summed over the ranks) and
  // this rank's drift and peaks: the caller merges those.
  // AMDP then runs across ranks (train/amdp_ranks.hpp): `rank` is this
  // process's, devices d*K..d*K+K-1 are on rank d / K.
  void set_executor(Executor e, int rank, int devices_per_rank) {
    exec_ = std::move(e);
    rank_ = rank;
    devices_per_rank_ = devices_per_rank;
  }

 private:
  struct Shape {
    Hint hint;
    std::unique_ptr<Pipeline> pipe;
    std::unique_ptr<AmdpRanks> ranks;  // AMDP under mpirun
  };
  Shape& shape(int K);
  const TrainOptions& o_;
  const Model& model_;
  const int P_, M_;
  std::vector<std::int64_t> msg_shape_;
  std::map<int, Shape> shapes_;  // per window length
  std::string policy_;
  std::vector<std::vector<std::vector<torch::Tensor>>> kept_;  // Hooks::keep_weights
  Executor exec_;  // set under mpirun; else execute()
  int rank_ = 0, devices_per_rank_ = 1;
};

}  // namespace rrfp::train
