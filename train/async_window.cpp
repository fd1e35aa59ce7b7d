#include "train/async_window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <shared_mutex>

#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"
#include "hints/replicate.hpp"
#include "runtime/executor.hpp"
#include "train/cuda_stream.hpp"
#include "train/mirror_reduce.hpp"
#include "train/trainer_io.hpp"
#include "train/weight_versions.hpp"

namespace rrfp::train {

int paci_drift_bound(int stages, int stage, int accumulate, int slack) {
  const int others = std::max(0, stages - stage - 1 + slack);
  return (others + accumulate - 1) / accumulate;
}

void check_async_options(const TrainOptions& o) {
  if (o.async_mode.empty()) return;
  const bool amdp = o.async_mode == "amdp";
  if (!amdp && o.async_mode != "paci")
    throw SpecError(fmt::format("unknown --async '{}' (known: paci, amdp)", o.async_mode));
  const char* what = amdp ? "--async amdp" : "--async paci";
  if (o.hint != "1f1b" || o.hint_object || !o.plan_path.empty())
    throw SpecError(fmt::format("{} {}; it does not accept the hint '{}'", what,
                                amdp ? "derives its own multi-directional order" : "runs 1F1B without a flush",
                                o.plan_path.empty() ? o.hint : "of --plan"));
  if (o.microbatches < 1)
    throw SpecError(fmt::format("--accumulate must be at least 1 microbatch per update, got {}", o.microbatches));
  if (o.split == 1) throw SpecError(fmt::format("{} runs the fused backward (--split 0), as the paper does", what));
  if (o.chunks > 1) throw SpecError(fmt::format("{} places its own stages (no --chunks)", what));
  if (o.executor != "starpu") throw SpecError("--async needs the StarPU executor");
  if (o.tensor_parallel > 1) throw SpecError("--async does not support --tensor-parallel");
  if (o.data_parallel > 1 && amdp)
    throw SpecError("--async amdp places its own stages (its directions are its copies): --data-parallel is not "
                    "supported with it");
  // A stage's copies on several ranks would need their sums and weights
  // moved inside the graph (as AMDP's, train/amdp_ranks.hpp): not done.
  if (o.data_parallel > 1 && o.multi_rank)
    throw SpecError("--async paci with --data-parallel runs in one process; under mpirun it is not supported yet");
  if (o.async_window < 1) throw SpecError(fmt::format("--window must be at least 1 step, got {}", o.async_window));
  if (amdp) {
    amdp_placement(o.stages, o.directions);  // names a P it cannot place
    if (o.microbatches % o.directions != 0)
      throw SpecError(fmt::format("--async amdp sends microbatch m down pipeline m mod {}: --accumulate {} is not a "
                                  "multiple of {}",
                                  o.directions, o.microbatches, o.directions));
  }
}

int async_drift_bound(const TrainOptions& o, int stages, int stage) {
  // AMDP: a forward of step k waits for its stage's update of step k-2, and
  // its backward comes after the update of step k-1 and before that of k.
  // o is the resolved run's: its microbatches count every replica's.
  return o.async_mode == "amdp"
             ? 1
             : paci_drift_bound(stages, stage, replica_share(o), o.inflight_slack);
}

AsyncWindows::AsyncWindows(const TrainOptions& o, const Model& model, int stages, std::vector<std::int64_t> msg_shape)
    : o_(o), model_(model), P_(stages), M_(o.microbatches), msg_shape_(std::move(msg_shape)) {}

AsyncWindows::Shape& AsyncWindows::shape(int K) {
  auto it = shapes_.find(K);
  if (it != shapes_.end()) return it->second;
  const bool amdp = o_.async_mode == "amdp";
  // PACI with D data-parallel replicas: D copies of the window's 1F1B, each
  // taking its share A of every step's microbatches (of the update).
  const int A = replica_share(o_);
  Shape sh{amdp ? amdp_hint(P_, o_.directions, M_, K)
                : replicate(make_hint("1f1b", {P_, K * A, 0, 0, 0}), std::max(1, o_.data_parallel), A),
           nullptr, nullptr};
  sh.pipe = std::make_unique<Pipeline>(model_, P_, K * M_, o_.deterministic, o_.partition);
  sh.pipe->set_message_shape(msg_shape_);
  sh.pipe->set_update_group(M_);
  // AMDP's stages live on several devices (one per direction), as PACI's
  // with replicas: their weights are one tensor set here (docs/async.md,
  // "Mirror groups"); each copy's activations are counted on its device.
  if (!amdp) sh.pipe->set_placement(sh.hint.spec().placement, sh.hint.spec().mb_pipeline);
  Shape& kept = shapes_.emplace(K, std::move(sh)).first->second;
  if (amdp && exec_) {  // across ranks: each rank sums its own copies' microbatches
    kept.ranks = std::make_unique<AmdpRanks>(kept.hint, M_, rank_, devices_per_rank_);
    for (int s = 0; s < P_; ++s) kept.pipe->set_local_microbatches(s, kept.ranks->local_microbatches(s));
  }
  return kept;
}

std::vector<StepRecord> AsyncWindows::run(int first_step, std::vector<std::vector<Microbatch>> batches,
                                          const std::vector<double>& tokens, ExecOptions eo, const Update& update,
                                          const Hooks& hooks) {
  using Clock = std::chrono::steady_clock;
  const int K = static_cast<int>(batches.size()), MW = K * M_;
  Shape& sh = shape(K);
  const TaskGraph& g = *sh.hint.graph;
  Pipeline& pipe = *sh.pipe;
  const bool distributed = static_cast<bool>(exec_);
  std::vector<Microbatch> mbs;
  for (auto& b : batches)
    for (auto& m : b) mbs.push_back(std::move(m));
  pipe.begin_step(std::move(mbs));

  // Stage s's update count: bumped by its update, read by every pass of
  // the stage (under AMDP on each device of its mirror group).
  std::vector<std::atomic<int>> version(P_);
  for (auto& v : version) v.store(0);
  // AMDP: a mirror device may run a forward of stage s while the home
  // device updates the stage's weights in place. The update takes the
  // stage exclusively, passes share it, so a pass sees the weights of one
  // version, never a half-updated set. (PACI: one worker per stage, no
  // contention, but with data-parallel replicas as AMDP's mirrors.)
  std::vector<std::shared_mutex> weights_mu(P_);
  // With --cuda the lock orders the host's calls, not the streams' kernels:
  // under AMDP a stage's passes and its update may be on different
  // streams, so each waits for its kernels before it lets the lock go
  // (docs/gpu.md, "Training on a GPU"). PACI's are on one stream (but
  // for replicas').
  const bool shared_weights = (o_.async_mode == "amdp" || o_.data_parallel > 1) && o_.cuda;
  // AMDP with --deterministic: a forward of group k runs with version k-1,
  // the one its gate waited for, whenever the update of group k-1 lands
  // (docs/async.md, "Reproducible AMDP"); `older` keeps what that needs.
  const bool fixed_versions = o_.async_mode == "amdp" && o_.deterministic;
  OlderWeights older(P_);
  std::vector<int> seen_f(static_cast<size_t>(P_) * MW, 0), seen_b(seen_f.size(), 0);
  std::vector<char> late(seen_f.size(), 0);  // a forward ran on an older copy
  std::vector<double> t_s(g.size(), 0);
  // Evaluation without a drain: an update of a step to evaluate copies the
  // stage's weights it leaves (each (k, s) its own slot: no lock).
  kept_.assign(K, std::vector<std::vector<torch::Tensor>>(P_));
  std::vector<char> keep(K, 0);
  for (int k = 0; k < K; ++k) keep[k] = hooks.keep_weights && hooks.keep_weights(first_step + k);
  eo.epilogue_group = M_;
  eo.gate_lag = o_.async_mode == "amdp" ? 2 : 0;
  // PACI: stage s admits a forward while fewer than P - s (+ slack) of its
  // forwards wait for their backward, as data flow, so StarPU's own
  // policies keep the window and the drift bound too (docs/async.md).
  if (o_.async_mode == "paci")
    for (int s = 0; s < P_; ++s) eo.forward_window.push_back(P_ - s + o_.inflight_slack);
  // PACI with --deterministic: each forward on the oldest version its
  // window lets it start on (docs/async.md, "Reproducible PACI").
  std::optional<PinnedVersions> pinned;
  if (o_.async_mode == "paci" && o_.deterministic) {
    // Each replica's microbatches counted apart.
    pinned.emplace(eo.forward_window, replica_share(o_), g.spec().pipeline_places());
  }
  AmdpRanks* xr = sh.ranks.get();  // AMDP across ranks: gradient sums and weights as StarPU data
  if (xr) {
    xr->begin_window();
    eo.state_bytes = [&pipe](int s) { return AmdpRanks::state_bytes(pipe, s); };
    eo.accumulator_device = [xr](int s, int d) { return xr->accumulator_device(s, d); };
  }
  // The home's update arrived on this rank: its copies take the weights.
  // With --cuda: on the calling task's stream (a WorkerStream is in scope),
  // done before the lock lets another stream read the weights.
  auto take_weights = [&](int s, const void* buf) {
    const std::int64_t v = AmdpRanks::packed_version(buf);  // on a GPU: one read-back
    std::unique_lock<std::shared_mutex> lk(weights_mu[s]);
    if (v <= xr->installed(s)) return;  // this rank holds it already: no copy, no wait
    if (fixed_versions) older.keep(pipe, s, version[s].load());
    if (xr->install(pipe, s, buf)) version[s].store(xr->installed(s));
    if (shared_weights) wait_for_current_stream(worker_cuda_device());
  };
  if (xr)
    eo.stage_install = [&](int e, int) {
      WorkerStream on_gpu(worker_cuda_device(), worker_cuda_stream());
      take_weights(e % P_, epilogue_io()->version);
    };
  eo.stage_epilogue = [&](int e) {  // group * P + stage
    const int k = e / P_, s = e % P_;
    const auto t0 = Clock::now();
    one_intra_op_thread();
    {
      // --cuda: the update on the stage's worker's stream, where its passes
      // run (PACI), so they see it in order.
      const int gpu = worker_cuda_device();
      WorkerStream on_gpu(gpu, worker_cuda_stream());
      std::unique_lock<std::shared_mutex> lk(weights_mu[s]);
      if (fixed_versions) older.keep(pipe, s, version[s].load());
      if (pinned) pinned->before_update(pipe, s, version[s].load());
      std::vector<torch::Tensor> grads = pipe.stage_grads(s);
      if (xr) xr->add_remote_sums(s, k, grads);
      update(s, first_step + k, grads);
      pipe.next_group(s);
      const int v = version[s].fetch_add(1) + 1;
      if (xr && epilogue_io()->version) AmdpRanks::pack_weights(pipe, s, v, epilogue_io()->version);
      if (keep[k]) kept_[k][s] = copy_stage_weights(pipe, s);
      if (shared_weights) wait_for_current_stream(gpu);  // updated before the lock lets another stream in
    }
    if (hooks.slice && !distributed) hooks.slice(g.spec().device_of(s, 0), fmt::format("opt{}", s), t0, Clock::now());
  };
  eo.link_delay_s = link_delays(o_, first_step);
  auto label = [&](const Task& t) { return fmt::format("{}{}{}", t.stage, csv_letter(t.kind), t.mb % M_); };
  auto body = [&](int call, const TaskIo& io) {
    const Task& t = g.task(call);
    const size_t at = static_cast<size_t>(t.stage) * MW + t.mb;
    if (hooks.before) hooks.before(first_step + t.mb / M_, t.kind, t.stage, t.mb % M_);
    // A CUDA worker: torch on its StarPU stream, the weight swap, the
    // installs and the packed sums included.
    WorkerStream on_gpu(io.cuda_device, io.stream);
    const bool away = xr && !xr->home_here(t.stage);  // the stage's update runs on another rank
    // A gated forward or a backward after the first group: the version it
    // read (runtime/data_plan.hpp), if this rank does not hold it yet.
    if (away && io.version) take_weights(t.stage, io.version);
    std::shared_lock<std::shared_mutex> lk(weights_mu[t.stage]);
    int ran_with = version[t.stage].load();
    int want = ran_with;
    if (fixed_versions && t.kind == Kind::F) want = std::max(0, t.mb / M_ - 1);
    if (pinned && t.kind == Kind::F) want = pinned->of_forward(t.stage, t.mb);
    if (want > ran_with)  // the window's data flow rules it out
      throw std::logic_error(fmt::format("forward {} of stage {} started at version {}, before its pinned {}", t.mb,
                                         t.stage, ran_with, want));
    std::unique_lock<std::shared_mutex> alone;  // the stage's weights swapped for this pass
    std::optional<WeightSwap> swap;
    if (ran_with != want) {  // the update of group k-1 landed (versions only grow): run on the older copy
      lk.unlock();
      alone = std::unique_lock<std::shared_mutex>(weights_mu[t.stage]);
      swap.emplace(pipe, t.stage, pinned ? pinned->copy_of(t.stage, want) : older.of(pipe, t.stage, want, io.version));
      ran_with = want;
      late[at] = 1;
    }
    (t.kind == Kind::F ? seen_f : seen_b)[at] = ran_with;
    const auto t0 = Clock::now();
    pipe.run(t.kind, t.stage, t.mb, io.in, io.out);
    const auto t1 = Clock::now();
    swap.reset();
    if (pinned && t.kind == Kind::F) pinned->ran(t.stage, t.mb);  // under the stage's lock still
    if (shared_weights) wait_for_current_stream(io.cuda_device);  // done with the weights before an update may start
    if (alone) alone.unlock();
    else lk.unlock();
    // This rank's last backward of the group (they share one accumulator,
    // so one at a time): its sum goes to the home's update.
    if (away && t.kind != Kind::F && xr->count_backward(t.stage, t.mb)) {
      AmdpRanks::pack_sum(pipe.stage_grads(t.stage), xr->local_count(t.stage, t.mb / M_), io.accumulator);
      pipe.next_group(t.stage);
    }
    t_s[call] = std::chrono::duration<double>(t1 - t0).count();
    if (hooks.slice && !distributed) hooks.slice(t.device, label(t), t0, t1);
  };
  if (!distributed) prepare_session(sh.hint, eo);  // under mpirun each window opens StarPU-MPI
  const auto t0 = Clock::now();
  const ExecResult r = distributed ? exec_(sh.hint, body, eo) : execute(sh.hint, body, eo);
  const auto t_end = Clock::now();
  const double wall = std::chrono::duration<double>(t_end - t0).count();
  policy_ = r.policy;
  if (distributed) merge_microbatch_losses(pipe);
  if (distributed && hooks.slice) {  // every rank's passes, on the common origin
    const auto origin = t_end - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.wall_s));
    auto at = [&](double x) { return origin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(x)); };
    for (int id = 0; id < g.size(); ++id)
      if (r.start_s[id] >= 0) hooks.slice(g.task(id).device, label(g.task(id)), at(r.start_s[id]), at(r.end_s[id]));
  }

  double busy = 0;
  for (double x : r.busy_s) busy += x;
  std::vector<StepRecord> out;
  for (int k = 0; k < K; ++k) {
    StepRecord rec;
    rec.step = first_step + k;
    rec.loss = static_cast<float>(pipe.group_loss(k));
    rec.step_s = wall / K;  // one graph: the window's time, shared evenly
    rec.tokens = tokens[k];
    rec.tokens_per_s = rec.step_s > 0 ? tokens[k] / rec.step_s : 0;
    rec.busy_s = busy / K;
    rec.bubble_ratio = r.makespan_s > 0 ? 1.0 - busy / (r.devices * r.makespan_s) : 0.0;
    rec.peak_activation_per_stage = pipe.peak_activation_bytes();
    if (!distributed) rec.peak_activation_per_device = pipe.peak_activation_per_device();  // as synchronous MPI runs
    rec.optimizer_device.assign(P_, -1);
    for (int s = 0; s < P_; ++s) {
      int mx = 0;
      double sum = 0;
      for (int m = k * M_; m < (k + 1) * M_; ++m) {
        const size_t at = static_cast<size_t>(s) * MW + m;
        const int d = seen_b[at] - seen_f[at];
        mx = std::max(mx, d);
        sum += d;
      }
      rec.drift_max.push_back(mx);
      rec.drift_mean.push_back(sum / M_);
      rec.drift_bound.push_back(async_drift_bound(o_, P_, s));
      for (int m = k * M_; m < (k + 1) * M_; ++m) rec.late_forwards += late[static_cast<size_t>(s) * MW + m];
      const int e = k * P_ + s;
      for (int d = 0; d < r.devices && e < static_cast<int>(r.epilogue_worker.size()); ++d)
        if (r.epilogue_worker[e] >= 0 && r.epilogue_worker[e] == r.device_worker[d]) rec.optimizer_device[s] = d;
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace rrfp::train
