// --async training: windows of steps, one graph each (train/async_window.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>

#include "mpi/mpi_session.hpp"
#include "train/grad_clip.hpp"
#include "train/trainer_impl.hpp"
#include "train/weight_versions.hpp"

namespace rrfp::train {

void Trainer::Impl::merge_rank_records(std::vector<StepRecord>& recs) {
  // Each (stage, microbatch) ran on one rank: a rank's mean already divides
  // by every microbatch of the step, so the means add up; so do the peaks
  // of a stage's copies (AMDP: home and mirror on two ranks; an upper bound
  // of their joint peak, exact when only one rank holds the stage). A
  // stage's norm is its updating ranks' (0 elsewhere; copies agree).
  for (StepRecord& r : recs) {  // the losses are merged already (AsyncWindows::run)
    std::vector<double> mx(r.drift_max.begin(), r.drift_max.end()), sum(r.drift_mean);
    mx.insert(mx.end(), r.stage_grad_norm.begin(), r.stage_grad_norm.end());
    for (auto x : r.peak_activation_per_stage) sum.push_back(static_cast<double>(x));
    sum.push_back(r.late_forwards);
    // MPI_MAX need not keep a NaN (a diverged stage): its count travels apart.
    for (double n : r.stage_grad_norm) sum.push_back(std::isnan(n) ? 1 : 0);
    mpi_max_in_place(mx.data(), static_cast<int>(mx.size()));
    mpi_sum_in_place(sum.data(), static_cast<int>(sum.size()));
    for (int s = 0; s < P; ++s) {
      r.drift_max[s] = static_cast<int>(mx[s]);
      if (!r.stage_grad_norm.empty())
        r.stage_grad_norm[s] = sum[2 * P + 1 + s] > 0 ? std::numeric_limits<double>::quiet_NaN() : mx[P + s];
      r.drift_mean[s] = sum[s];
      r.peak_activation_per_stage[s] = static_cast<std::int64_t>(sum[P + s]);
    }
    r.late_forwards = static_cast<int>(sum[2 * P]);
  }
}

bool Trainer::Impl::evaluate_kept(const std::vector<std::vector<std::vector<torch::Tensor>>>& kept,
                                  std::vector<StepRecord>& recs) {
  bool other = false;
  for (size_t k = 0; k < kept.size(); ++k) {
    if (!eval_due(recs[k].step)) continue;
    // Each stage's weights of that step where this rank updated it (under
    // mpirun validation_loss() shares them from the stages' owners); the
    // window's last step has the weights as they are (none kept).
    std::vector<std::unique_ptr<WeightSwap>> swaps;
    if (k + 1 < kept.size()) {
      other = true;
      for (int s = 0; s < P; ++s) {
        if (!kept[k][s].empty()) swaps.push_back(std::make_unique<WeightSwap>(pipe(), s, kept[k][s]));
        else if (!mpi || stage_owner(s) == mpi_rank)
          throw std::logic_error(fmt::format("step {}: stage {} kept no weights to evaluate", recs[k].step, s));
      }
    }
    recs[k].val_loss = validation_loss();
  }
  return other;
}

StepRecord Trainer::Impl::async_step() {
  if (async_done.empty()) {
    int K = std::min(o.async_window, o.steps - next + 1);
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0)
      K = std::min(K, o.checkpoint_every - (next - 1) % o.checkpoint_every);
    std::vector<std::vector<Microbatch>> batches;
    std::vector<double> toks;
    for (int k = 0; k < K; ++k) {
      batches.push_back(data->next());
      toks.push_back(data->tokens());
    }
    if (o.cuda) wait_for_current_stream(model().device().index());  // as in pipeline_pass
    ExecOptions eo = exec_options(next);
    eo.task_hook = nullptr;  // the window's graph has its own task ids
    AsyncWindows::Hooks hooks;
    if (!fault.task.empty())  // RRFP_FAIL_TASK names a pass of a step, as in the synchronous graph
      hooks.before = [this](int step, Kind k, int s, int m) {
        if (const int id = g.find(k, s, m); id >= 0) fault.fail_if_hit(g, id, step);
      };
    if (!o.trace_path.empty())  // under a lock: passes of several workers end at once
      hooks.slice = [this](int d, const std::string& name, Clock::time_point t0, Clock::time_point t1) {
        std::lock_guard<std::mutex> lk(trace_mu);
        trace.slices.push_back({d, name, secs(t0 - t_run), secs(t1 - t_run)});
      };
    // The window's last step is evaluated on the weights it ends with: no copy.
    if (o.eval_every > 0) hooks.keep_weights = [this, last = next + K - 1](int step) { return step != last && eval_due(step); };
    // --clip-grad: [step - first][stage], each slot written by one update task.
    std::vector<std::vector<double>> norms;
    if (o.clip_grad > 0) norms.assign(K, std::vector<double>(P, 0.0));
    auto recs = async->run(
        next, std::move(batches), toks, eo,
        [this, &norms, first = next](int s, int step, const std::vector<torch::Tensor>& gr) {
          // --clip-grad: the stage's own norm; a stage updates alone here
          if (o.clip_grad > 0) norms.at(step - first).at(s) = clip_stage_grads(gr, o.clip_grad);
          optimizer_step(0, s, step, gr);
        },
        hooks);
    for (size_t k = 0; k < norms.size() && k < recs.size(); ++k) recs[k].stage_grad_norm = norms[k];
    res.policy = async->policy();
    const bool evaluated = evaluate_kept(async->take_kept_weights(), recs);
    // AMDP: copies away from a stage's home missed its last updates; the
    // homes' weights, for the next window, evaluation and checkpoints.
    // After an evaluation of kept weights, every rank's copies of the
    // stages it does not own hold those: the current ones again.
    if (mpi && (o.async_mode == "amdp" || evaluated)) share_stage_state(false);
    if (mpi) merge_rank_records(recs);
    async_done.assign(std::make_move_iterator(recs.rbegin()), std::make_move_iterator(recs.rend()));
  }
  StepRecord rec = std::move(async_done.back());
  async_done.pop_back();
  for (auto v : rec.peak_activation_per_stage) rec.peak_activation_bytes = std::max(rec.peak_activation_bytes, v);
  account(rec);
  res.steps.push_back(rec);
  ++next;
  if (checkpoint_due(rec.step)) save(rec.step);
  return rec;
}

}  // namespace rrfp::train
