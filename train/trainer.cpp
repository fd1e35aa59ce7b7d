#include "train/trainer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "hints/generators.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tp_comm.hpp"
#include "train/data.hpp"
#include "train/mirror_reduce.hpp"
#include "train/mm_model.hpp"
#include "train/reference.hpp"
#include "train/replay_order.hpp"
#include "train/trainer_impl.hpp"

namespace rrfp::train {

Trainer::Impl::Impl(Resolved r)
    : o(std::move(r.o)),
      M(o.microbatches),
      b(micro_batch(o)),  // validates the options first
      hint(std::move(r.hint)),
      g(*hint.graph),
      P(hint.spec().stages),
      mm(o.model == "mm-tiny"),
      TP(o.tensor_parallel),
      mpi(o.executor == "starpu" && o.multi_rank) {
  one_intra_op_thread();
  memory_budget = std::move(r.memory_budget);
  if (mm)
    model_ptr = std::make_unique<MmModel>(o.gpt, o.enc_layers, o.seed);
  else
    model_ptr = std::make_unique<GptModel>(o.gpt, o.seed);
  const std::vector<StageRange> ranges = model().partition(P, o.partition);  // "more stages than blocks" before any work
  if (TP > 1) check_tp_stages(model(), ranges);
  if (o.cuda) {
    model_ptr->to(cuda_device());  // before the optimizers make their moments
    install_cuda_memory_accounting();  // CUDA is in use now: its allocators exist
  }
  for (int t = 0; t < TP && TP > 1; ++t) shards.push_back(tp_member(model(), TP, t));
  data = std::make_unique<BatchSource>(o, M, b);
  // Every message between stages is one [b, positions, d_model] activation
  // or gradient (mm-tiny: the encoder hands over its prefix and the
  // caption, a fixed size), a StarPU data handle of that many floats.
  msg_shape = {b, mm ? kPrefix + kCaption : o.gpt.seq_len, o.gpt.d_model};
  for (int t = 0; t < TP; ++t) {
    owned_pipes.push_back(std::make_unique<Pipeline>(member_model(t), P, M, o.deterministic, o.partition));
    owned_pipes.back()->set_message_shape(msg_shape);
    owned_pipes.back()->set_device(model().device());
    owned_pipes.back()->set_placement(hint.spec().placement, hint.spec().mb_pipeline);
    pipes.push_back(owned_pipes.back().get());
  }
  if (!o.mirror_reduce.empty() && o.mirror_reduce != "auto" && o.mirror_reduce != "overlap" &&
      o.mirror_reduce != "after-graph")
    throw SpecError(fmt::format("--mirror-reduce '{}': auto, overlap or after-graph", o.mirror_reduce));
  if (mpi) {
    mpi_rank = mpi_world().rank;
    plan = mpi_train_plan(hint, TP, o.devices_per_rank, mpi_rank, o.deterministic);
    if (!o.mirror_reduce.empty() && !o.async_mode.empty())
      throw SpecError("--mirror-reduce: --async has no reduction after its steps (AMDP reduces inside its graph)");
    if (!o.mirror_reduce.empty() && !plan.any_mirrored())
      throw SpecError("--mirror-reduce: no stage of this run has copies on several ranks (Chimera, --data-parallel)");
    // Beside the graph its sums and updates take CPU time from the workers:
    // a gain only with a core to spare (perf/RESULTS.md, "The mirror
    // reduction beside the graph": 0.97-1.00x on ranks without one).
    if (plan.any_mirrored() && o.async_mode.empty())
      res.mirror_reduce = o.mirror_reduce == "overlap" ||
                                  ((o.mirror_reduce.empty() || o.mirror_reduce == "auto") &&
                                   rank_has_spare_core(o.devices_per_rank))
                              ? "overlap"
                              : "after-graph";
    plan.mopt.timeout_s = o.mpi_timeout_s;
    if (o.ordered_channels) plan.mopt.transport = RankTransportKind::Ordered;
    if (TP > 1) {
      // Every all-reduce is one [b, positions, d_model] activation or its
      // gradient: gpt's sequence; mm-tiny's patches (encoder) or its
      // prefix and caption (language blocks).
      const int positions = mm ? std::max(kMaxPatches, kPrefix + kCaption) : o.gpt.seq_len;
      auto c = std::make_unique<MpiTpComm>(hint.devices(), TP, o.devices_per_rank,
                                           static_cast<std::size_t>(b) * positions * o.gpt.d_model, 60.0);
      plan.mopt.tp_comm = c.get();
      tp_comm = std::move(c);
    }
  } else if (TP > 1) {
    tp_comm = std::make_unique<LocalTpComm>(hint.devices(), TP, 60.0);
  }
  if (!o.mirror_reduce.empty() && !mpi)
    throw SpecError("--mirror-reduce applies under mpirun/srun (one process reduces stage copies in the graph)");
  opts.resize(TP);
  AdamWOptions ao;
  ao.lr = lr_schedule(o);
  for (int t = 0; t < TP; ++t) {
    size_t at = 0;
    for (int s = 0; s < P; ++s) {
      std::vector<torch::Tensor> ps;
      for (const auto& np : pipes[t]->stage(s).params()) ps.push_back(np.t);
      if (t == 0) stage_begin.push_back(at);
      at += ps.size();
      opts[t].emplace_back(ps, ao);
    }
  }
  res.model_stages = P;
  ident = identity(o, P, b);
  if (o.model != "mm-tiny") {  // mm-tiny draws its images; its validation set has a seed of its own
    if (o.eval_every > 0) ident["validation"] = "held-out";  // training leaves the corpus' last tenth out
    ident["data"] = data->data_fingerprint();  // not another file's text, nor the generated corpus instead
  }
  {  // StarPU's performance models keep one history per model shape and stage
    nlohmann::json shape = ident;
    for (const char* k : {"seed", "microbatches", "validation", "data"}) shape.erase(k);
    shape["tensor_parallel"] = TP;
    workload_key = workload_key_of("train|" + shape.dump());
  }
  res.target.loss = o.target_loss;
  if (!o.async_mode.empty()) {
    async = std::make_unique<AsyncWindows>(o, model(), P, msg_shape);
    if (mpi) async->set_executor(mpi_executor(plan.mopt), mpi_rank, o.devices_per_rank);
    ident["async"] = o.async_mode;  // a synchronous checkpoint's identity stays as it was
    if (o.async_mode == "amdp") ident["directions"] = o.directions;
  }
  if (mpi) {  // before the first message: ranks of other runs would abort in StarPU-MPI or wait forever
    if (!mpi_all_equal(rank_agreement(o, hint, ident).dump()))
      throw SpecError("the ranks were started with different `rrfp train` flags or data (model, data file, seed, "
                      "schedule, steps, learning rate, clipping, checkpointing, evaluation or transport differ): "
                      "every rank needs the same ones");
  }
  if (!fault.task.empty()) {  // a failure that can never fire would pass a fault test silently
    bool optimizer = false, pass = false;
    for (int s = 0; s < P && !optimizer; ++s) optimizer = fault.names_optimizer(s);
    for (int id = 0; id < g.size() && !optimizer && !pass; ++id) pass = task_matches(g, id, fault.task);
    if (!optimizer && !pass)
      throw SpecError(fmt::format("RRFP_FAIL_TASK='{}' names no task of this run (a cell label such as 1F0 or "
                                  "0B2, or opt<stage>)", fault.task));
    if (pass && o.executor == "plain")  // plain runs each microbatch's passes as one call, not as tasks
      throw SpecError(fmt::format("RRFP_FAIL_TASK='{}' names a pass, and --executor plain runs no task graph: "
                                  "use --executor starpu or replay (plain can fail opt<stage>)", fault.task));
  }
  if (o.resume) resume();
  // A fresh run would replace a run's saved state at its first checkpoint:
  // training state is never lost silently (docs/training.md, "Checkpoints").
  // Under mpirun rank 0 alone writes there (another rank's node may hold a
  // stale file of its own); its error stops every rank.
  if (!o.resume && !o.checkpoint_dir.empty() && (!mpi || mpi_rank == 0) &&
      std::filesystem::exists(checkpoint_path(o.checkpoint_dir)))
    throw SpecError(fmt::format("--checkpoint '{}' already holds a checkpoint: --resume continues it; to start over, "
                                "remove it or choose another directory",
                                o.checkpoint_dir));
  if (res.first_step > o.steps)
    throw SpecError(fmt::format("--resume: the checkpoint in '{}' is at step {}; --steps {} trains nothing more "
                                "(--steps counts from the start of the run)", o.checkpoint_dir, res.first_step - 1,
                                o.steps));
  next = res.first_step;
  if (o.executor == "replay") order = replay_order(hint, &predicted_bubble);
  res.policy = o.executor == "starpu" ? "" : o.executor;
  for (int d = 0; d < hint.devices(); ++d) trace.tracks.push_back(fmt::format("device {}", d));
  trace.title = fmt::format("rrfp train {} {} S={} M={}", o.model, o.hint, o.stages, M);
  t_start.assign(g.size(), 0);
  t_end.assign(g.size(), 0);
  opt_start.assign(P, -1);
  opt_end.assign(P, -1);
  t_run = Clock::now();
}

void Trainer::Impl::optimizer_step(int member, int s, int step, const std::vector<torch::Tensor>& gr) {
  if (fault.hits_optimizer(s, step))
    throw std::runtime_error(fmt::format("injected failure in the optimizer step of stage {} at step {} "
                                         "(RRFP_FAIL_TASK)", s, step));
  opts[member][s].step(gr);
}

std::vector<std::vector<torch::Tensor>> Trainer::Impl::plain_pass(std::vector<Microbatch> mbs, StepRecord& rec) {
  std::vector<std::vector<torch::Tensor>> grads(P);
  for (Microbatch& mb : mbs) to_device(mb, model().device());
  const auto tp = Clock::now();
  ReferenceStep r = reference_step(model(), mbs);
  rec.busy_s = secs(Clock::now() - tp);
  rec.loss = static_cast<float>(r.loss);  // losses are float: %.9g round-trips
  for (int s = 0; s < P; ++s) {
    const size_t n = pipe().stage(s).params().size();
    grads[s].assign(r.grads.begin() + stage_begin[s], r.grads.begin() + stage_begin[s] + n);
  }
  rec.peak_activation_per_stage.assign(P, 0);
  return grads;
}

torch::Device Trainer::Impl::cuda_device() {
  if (!torch_built_with_cuda())
    throw SpecError("--cuda: this rrfp's LibTorch has no CUDA (configure with -DRRFP_CUDA=ON, docs/gpu.md)");
  if (o.executor == "plain") {
    if (!torch::cuda::is_available()) throw SpecError("--cuda: LibTorch finds no usable CUDA device");
    return {torch::kCUDA, 0};
  }
  // StarPU first: its first bus calibration may reset the GPU under torch.
  ExecOptions eo;
  eo.policy = o.policy;
  eo.tensor_parallel = TP;
  eo.cuda = true;
  // Under mpirun each rank holds the model on the GPU of its own devices.
  const std::vector<int> gpus = mpi ? prepare_mpi_session(eo, o.devices_per_rank) : cuda_devices_of(hint, eo);
  for (int d = 1; d < static_cast<int>(gpus.size()); ++d)
    if (gpus[d] != gpus[0])
      throw SpecError(fmt::format("--cuda: StarPU put {}device {} on GPU {} and device 0 on GPU {}; rrfp train keeps "
                                  "the model on one GPU {} for now (CUDA_VISIBLE_DEVICES=N picks it{})",
                                  mpi ? "this rank's " : "", d, gpus[d], gpus[0], mpi ? "per rank" : "per process",
                                  mpi ? ", or fewer --devices-per-rank"
                                      : "; for several GPUs run a rank per GPU: mpirun -np G rrfp train --cuda "
                                        "--devices-per-rank K, docs/gpu.md"));
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(gpus[0])};
}

ExecOptions Trainer::Impl::exec_options(int step) {
  ExecOptions eo;
  eo.policy = o.policy;
  eo.tensor_parallel = TP;
  eo.cuda = o.cuda;
  // Each stage's AdamW step (each member's, with TP) is a StarPU task on
  // the stage's device, after all of its W/BW tasks (deterministic mode:
  // the microbatch gradients are summed in order there too).
  // --clip-grad (synchronous): every update waits for the model's norm,
  // so they run after the graph (update_after_graph), as Megatron's do.
  const bool updates_in_graph = !(o.clip_grad > 0 && !async);
  if (updates_in_graph) {
    eo.stage_epilogue = [this, step](int i) {  // member * P + stage
      const int t = i / P, s = i % P;
      // Copies on several ranks: updated after the graph (mirror_update).
      if (mpi && !plan.mirror[plan.at(s, t)].empty()) return;
      if (t == 0) opt_start[s] = secs(Clock::now() - t_run);
      one_intra_op_thread();
      WorkerStream on_gpu(worker_cuda_device(), worker_cuda_stream());  // a CUDA worker: torch on its StarPU stream
      optimizer_step(t, s, step, pipes[t]->stage_grads(s));
      if (t == 0) opt_end[s] = secs(Clock::now() - t_run);
    };
  }
  eo.worker_init = warm_worker;
  eo.inflight_slack = o.inflight_slack;
  eo.memory_budget = memory_budget;
  eo.link_delay_s = link_delays(o, step);
  std::int64_t elems = 1;
  for (auto x : msg_shape) elems *= x;
  eo.message_bytes = static_cast<std::size_t>(elems) * sizeof(float);
  eo.workload_key = workload_key;
  eo.iteration = step;
  if (!fault.task.empty() || o.task_hook)
    eo.task_hook = [this, step](int call) {
      fault.fail_if_hit(g, call % g.size(), step);
      if (o.task_hook) o.task_hook(call);
    };
  return eo;
}

bool Trainer::Impl::pipeline_pass(std::vector<Microbatch> mbs, int step, StepRecord& rec) {
  bool stepped = false;
  // What this thread queued on the GPU (a restored checkpoint, Chimera's
  // mirrored updates and shared weights across ranks) lands before the
  // workers' streams read the weights.
  if (o.cuda) wait_for_current_stream(model().device().index());
  for (int t = 1; t < TP; ++t) pipes[t]->begin_step(mbs);
  if (tp_comm) tp_comm->clear_log();  // the collective logs are per step
  pipe().begin_step(std::move(mbs));
  const ExecOptions eo = o.executor == "starpu" ? exec_options(step) : ExecOptions{};
  // Declared before the body, which calls it, and destroyed after the
  // executor: a failed graph stops its thread.
  const auto overlap = mirror_overlap(step, static_cast<bool>(eo.stage_epilogue));
  // With tensor parallelism the executor calls this once per member,
  // with member * tasks + id.
  auto body = [&](int call, const TaskIo& io) {
    const int id = call % g.size(), member = call / g.size();
    if (member == 0) t_start[id] = secs(Clock::now() - t_run);
    const Task& t = g.task(id);
    std::optional<TpTaskScope> scope;
    if (TP > 1) scope.emplace(tp_comm.get(), t.device, member, id);
    WorkerStream on_gpu(io.cuda_device, io.stream);  // a CUDA worker: torch on its StarPU stream
    pipes[member]->run(t.kind, t.stage, t.mb, io.in, io.out);
    if (overlap && (t.kind == Kind::W || t.kind == Kind::BW))  // the sums it reads are complete
      overlap->pass_done(plan.at(t.stage, member), [&] { wait_for_current_stream(io.cuda_device); });
    if (member == 0) t_end[id] = secs(Clock::now() - t_run);
  };
  if (o.executor == "starpu") {
    const ExecResult r = mpi ? mpi_executor(plan.mopt)(hint, body, eo) : execute(hint, body, eo);
    res.policy = r.policy;
    stepped = static_cast<bool>(eo.stage_epilogue);
    for (int s = 0; s < P && s < static_cast<int>(r.epilogue_worker.size()); ++s)
      for (int d = 0; d < r.devices; ++d)
        if (r.epilogue_worker[s] >= 0 && r.epilogue_worker[s] == r.device_worker[d]) rec.optimizer_device[s] = d;
    for (int s = 0; s < P && mpi; ++s)
      if (plan.mirrored(s)) rec.optimizer_device[s] = -1;  // updated outside the graph (mirror_overlap, mirror_update)
    if (mpi && !o.trace_path.empty()) {
      // The merged records of every rank, on one time origin.
      const double off = secs(Clock::now() - t_run) - r.wall_s;
      for (int id = 0; id < g.size(); ++id) t_start[id] = off + r.start_s[id], t_end[id] = off + r.end_s[id];
    }
    double busy = 0;
    for (double x : r.busy_s) busy += x;
    rec.busy_s = busy;
    rec.bubble_ratio = r.makespan_s > 0 ? 1.0 - busy / (r.devices * r.makespan_s) : 0.0;
  } else {
    for (int id : order) {
      fault.fail_if_hit(g, id, step);
      body(id, TaskIo{});
    }
    for (int id : order) rec.busy_s += t_end[id] - t_start[id];
    rec.bubble_ratio = predicted_bubble;  // one thread: the schedule's unit-cost bubble
  }
  if (overlap)
    overlap->finish();
  else if (mpi && stepped)
    mirror_update(step);
  if (mpi) merge_microbatch_losses(pipe());  // the last stage's ranks (both directions' under Chimera) hold them
  rec.loss = static_cast<float>(pipe().loss());
  rec.peak_activation_per_stage = pipe().peak_activation_bytes();
  if (!mpi) rec.peak_activation_per_device = pipe().peak_activation_per_device();
  rec.task_s.resize(g.size());
  for (int id = 0; id < g.size(); ++id) rec.task_s[id] = t_end[id] - t_start[id];
  if (!o.trace_path.empty())
    for (int id = 0; id < g.size(); ++id)
      trace.slices.push_back({g.task(id).device, g.label(id), t_start[id], t_end[id]});
  // (Under MPI each rank knows only its own optimizer tasks: left out.)
  if (!o.trace_path.empty() && stepped && !mpi)
    for (int s = 0; s < P; ++s)
      if (opt_start[s] >= 0)
        trace.slices.push_back({g.spec().device_of(s, 0), fmt::format("opt{}", s), opt_start[s], opt_end[s]});
  return stepped;
}

bool Trainer::Impl::checkpoint_due(int step) const {
  if (o.checkpoint_dir.empty()) return false;
  // --async evaluates without a drain: a run that reached its target goes
  // on to its window's end, where the weights are a step's own.
  const bool stops_here = res.target.reached && (async ? async_done.empty() : res.target.step == step);
  return (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == o.steps || stops_here;
}

bool Trainer::Impl::eval_due(int step) const {
  // Every K steps and after the last one, as Megatron does: a run's final
  // weights always have a validation loss.
  return o.eval_every > 0 && (step % o.eval_every == 0 || step == o.steps);
}

void Trainer::Impl::account(StepRecord& rec) {
  // Every rank has the same loss (it is all-reduced), so all stop alike,
  // and before a checkpoint of the diverged weights replaces a good one.
  if (!std::isfinite(rec.loss))
    throw SpecError(fmt::format("step {}: the training loss is {}: the run diverged (a lower --lr?); no checkpoint "
                                "of this step was written", rec.step, rec.loss));
  seconds_total += rec.step_s;
  tokens_total += rec.tokens;
  if (!eval_due(rec.step)) return;
  if (!async) rec.val_loss = validation_loss();  // --async: from the weights its window kept (async_step)
  if (o.target_loss > 0 && !res.target.reached && rec.val_loss <= o.target_loss)
    res.target = {o.target_loss, true, rec.step, seconds_total, tokens_total};
}

StepRecord Trainer::Impl::step() {
  if (async) return async_step();
  const int step = next;
  auto mbs = data->next();
  StepRecord rec;
  rec.step = step;
  rec.optimizer_device.assign(P, -1);
  // StarPU's start-up (first step, or after another run used StarPU) is
  // not part of the step's time.
  if (o.executor == "starpu" && !mpi) prepare_session(hint, exec_options(step));
  const auto t0 = Clock::now();
  std::vector<std::vector<torch::Tensor>> grads;  // the plain loop's (update_after_graph takes the pipeline's)
  bool stepped = false;
  if (o.executor == "plain")
    grads = plain_pass(std::move(mbs), rec);
  else
    stepped = pipeline_pass(std::move(mbs), step, rec);
  if (!stepped) update_after_graph(step, grads, rec);
  rec.step_s = secs(Clock::now() - t0);
  rec.tokens_per_s = rec.step_s > 0 ? data->tokens() / rec.step_s : 0;
  for (auto v : rec.peak_activation_per_stage) rec.peak_activation_bytes = std::max(rec.peak_activation_bytes, v);
  rec.tokens = data->tokens();
  account(rec);
  res.steps.push_back(rec);
  ++next;
  if (checkpoint_due(step)) save(step);
  return rec;
}

TrainResult Trainer::Impl::finish() {
  res.grad_buffer_bytes = o.executor == "plain" ? 0 : pipe().grad_buffer_bytes();
  if (!o.trace_path.empty() && mpi_rank == 0) write_chrome_trace(trace, o.trace_path);
  if (!o.json_path.empty() && mpi_rank == 0) write_train_json(o.json_path, o, res, b);
  return res;
}

Trainer::Trainer(const TrainOptions& o) : impl_(std::make_unique<Impl>(o)) {}
Trainer::~Trainer() = default;
bool Trainer::done() const {
  // --async: a window's steps all ran; a target reached inside it still reports them.
  return impl_->next > impl_->o.steps || (impl_->res.target.reached && impl_->async_done.empty());
}
int Trainer::next_step() const { return impl_->next; }
StepRecord Trainer::step() {
  if (done()) throw SpecError(fmt::format("the run already trained its {} steps", impl_->o.steps));
  return impl_->step();
}
TrainResult Trainer::finish() { return impl_->finish(); }

TrainResult train(const TrainOptions& o, const std::function<void(const StepRecord&)>& on_step) {
  Trainer t(o);
  while (!t.done()) {
    const StepRecord r = t.step();
    if (on_step) on_step(r);
  }
  return t.finish();
}

}  // namespace rrfp::train

