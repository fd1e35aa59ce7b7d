#include "train/trainer.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>

#include "hints/generators.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/mpi_tp_comm.hpp"
#include "plot/timeline.hpp"
#include "runtime/executor.hpp"
#include "train/adamw.hpp"
#include "train/async_window.hpp"
#include "train/batch_source.hpp"
#include "train/checkpoint.hpp"
#include "train/data.hpp"
#include "train/mm_model.hpp"
#include "train/mpi_train.hpp"
#include "train/pipeline.hpp"
#include "train/reference.hpp"
#include "train/replay_order.hpp"
#include "train/run_shape.hpp"
#include "train/tp_model.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

// Everything one run holds between steps. Built (and resumed) by the
// constructor, advanced by step(), reported by finish().
struct Trainer::Impl {
  const TrainOptions o;
  const int M, b;
  const Hint hint;
  const TaskGraph& g;
  const int P;          // model stages
  const bool mm;
  const int TP;
  const bool mpi;       // under mpirun/srun each rank runs its own stages (docs/mpi.md)
  int mpi_rank = 0;
  std::unique_ptr<Model> model_ptr;
  // Tensor parallelism: member t of every device trains shards[t]; member
  // pipelines[t] holds its passes' state (train/tp_model.hpp).
  std::vector<std::unique_ptr<GptTpShard>> shards;
  std::unique_ptr<BatchSource> data;  // training and validation microbatches
  std::vector<std::unique_ptr<Pipeline>> owned_pipes;
  std::vector<Pipeline*> pipes;  // per member; pipes[0] is the leader's
  std::unique_ptr<TpComm> tp_comm;
  MpiTrainPlan plan;
  std::vector<std::vector<AdamW>> opts;  // per member, per stage
  std::vector<size_t> stage_begin;       // first global param index of each stage
  nlohmann::json ident;
  TrainResult res;
  int next = 1;                          // the step step() trains
  const Fault fault{o.fail_task, o.fail_step};
  double predicted_bubble = 0;
  std::vector<int> order;                // replay executor
  Timeline trace;
  std::mutex trace_mu;                   // --async: slices come from the workers
  std::vector<double> t_start, t_end;    // per task, seconds since t_run
  std::vector<double> opt_start, opt_end;  // optimizer tasks, for --trace
  Clock::time_point t_run;
  std::vector<std::int64_t> msg_shape;   // every activation / gradient message
  std::unique_ptr<AsyncWindows> async;   // --async: windows of steps, one graph each
  std::vector<StepRecord> async_done;    // --async: records of the window trained, not yet returned
  double seconds_total = 0, tokens_total = 0;  // trained so far (--target-loss)

  static int micro_batch(const TrainOptions& o) {
    check_options(o);
    return o.batch_size > 0 ? o.batch_size / o.microbatches : o.micro_batch_size;
  }
  using Resolved = ResolvedRun;
  static Resolved resolve(TrainOptions o) {
    check_async_options(o);  // first: --accumulate 0 is named as such
    return resolve_run(std::move(o));
  }

  explicit Impl(const TrainOptions& opt) : Impl(resolve(opt)) {}
  explicit Impl(Resolved r)
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
    if (mm)
      model_ptr = std::make_unique<MmModel>(o.gpt, o.enc_layers, o.seed);
    else
      model_ptr = std::make_unique<GptModel>(o.gpt, o.seed);
    model().partition(P, o.partition);  // "more stages than blocks" before any work
    for (int t = 0; t < TP && TP > 1; ++t)
      shards.push_back(std::make_unique<GptTpShard>(static_cast<const GptModel&>(model()), TP, t));
    data = std::make_unique<BatchSource>(o, M, b);
    // Every message between stages is one [b, positions, d_model] activation
    // or gradient (mm-tiny: the encoder hands over its prefix and the
    // caption, a fixed size), a StarPU data handle of that many floats.
    msg_shape = {b, mm ? kPrefix + kCaption : o.gpt.seq_len, o.gpt.d_model};
    for (int t = 0; t < TP; ++t) {
      owned_pipes.push_back(std::make_unique<Pipeline>(member_model(t), P, M, o.deterministic, o.partition));
      owned_pipes.back()->set_message_shape(msg_shape);
      if (hint.spec().pipelines() == 1) owned_pipes.back()->set_stage_devices(hint.spec().placement[0]);
      pipes.push_back(owned_pipes.back().get());
    }
    if (mpi) {
      mpi_rank = mpi_world().rank;
      plan = mpi_train_plan(hint, TP, o.devices_per_rank, mpi_rank);
      plan.mopt.timeout_s = o.mpi_timeout_s;
      if (TP > 1) {
        // Every all-reduce is one [b, T, d_model] activation or its gradient.
        auto c = std::make_unique<MpiTpComm>(hint.devices(), TP, o.devices_per_rank,
                                             static_cast<std::size_t>(b) * o.gpt.seq_len * o.gpt.d_model, 60.0);
        plan.mopt.tp_comm = c.get();
        tp_comm = std::move(c);
      }
    } else if (TP > 1) {
      tp_comm = std::make_unique<LocalTpComm>(hint.devices(), TP, 60.0);
    }
    opts.resize(TP);
    AdamWOptions ao;
    ao.lr = o.lr;
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
    if (o.eval_every > 0) ident["validation"] = "held-out";  // training leaves the last tenth out
    res.target.loss = o.target_loss;
    if (!o.async_mode.empty()) {
      async = std::make_unique<AsyncWindows>(o, model(), P, msg_shape);
      ident["async"] = o.async_mode;  // a synchronous checkpoint's identity stays as it was
      if (o.async_mode == "amdp") ident["directions"] = o.directions;
    }
    if (o.resume) resume();
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

  const Model& model() const { return *model_ptr; }
  const Model& member_model(int t) const { return TP > 1 ? *shards[t] : model(); }
  Pipeline& pipe() { return *pipes[0]; }

  // Checkpoints hold the full model whatever TP is: members' shards are
  // gathered on save and split on resume (same file as a TP = 1 run).
  torch::Tensor gather(const std::string& name, const std::function<torch::Tensor(int member)>& member_tensor) const {
    if (TP == 1) return member_tensor(0);
    std::vector<torch::Tensor> parts;
    for (int t = 0; t < TP; ++t) parts.push_back(member_tensor(t));
    return unshard(parts, shard_spec(name));
  }
  void scatter(const Checkpoint& c, const std::string& key, const std::string& name, const torch::Tensor& like,
               const std::function<torch::Tensor(int member)>& member_tensor, const std::string& where) const {
    torch::Tensor full = TP == 1 ? member_tensor(0) : torch::empty(like.sizes(), torch::kFloat32);
    from_ckpt(c, key, full, where);
    torch::NoGradGuard ng;
    for (int t = 0; t < TP && TP > 1; ++t) member_tensor(t).copy_(shard_of(full, shard_spec(name), t, TP));
  }

  void resume() {
    const Checkpoint c = load_checkpoint(o.checkpoint_dir);
    const std::string where = checkpoint_path(o.checkpoint_dir);
    check_identity(ident, c.meta, where);
    try {
      const auto& full = model().all_params();
      for (size_t i = 0; i < full.size(); ++i)
        scatter(c, "param/" + full[i].name, full[i].name, full[i].t,
                [&](int t) { return member_model(t).all_params()[i].t; }, where);
      for (int s = 0; s < P; ++s) {
        const auto& ps = pipe().stage(s).params();
        for (size_t i = 0; i < ps.size(); ++i) {
          const torch::Tensor& like = full[stage_begin[s] + i].t;
          scatter(c, "adam_m/" + ps[i].name, ps[i].name, like, [&](int t) { return opts[t][s].exp_avg()[i]; }, where);
          scatter(c, "adam_v/" + ps[i].name, ps[i].name, like, [&](int t) { return opts[t][s].exp_avg_sq()[i]; },
                  where);
        }
        for (int t = 0; t < TP; ++t) opts[t][s].set_steps(c.meta.at("adam_steps").get<std::int64_t>());
      }
      SamplerState st;
      const auto& rng = c.meta.at("sampler").at("rng");
      for (int i = 0; i < 4; ++i) st.rng[i] = rng.at(i).get<std::uint64_t>();
      st.sequences_drawn = c.meta.at("sampler").at("sequences_drawn").get<std::uint64_t>();
      data->set_state(st);
      res.first_step = c.meta.at("step").get<int>() + 1;
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(fmt::format("checkpoint '{}' has an incomplete header: {}", where, e.what()));
    }
  }

  void save(int step) {
    if (mpi) {
      // Each rank updated only its own stages (and members): their owners
      // broadcast parameters and AdamW moments, so every rank holds the
      // whole state and rank 0 writes it (MPI between steps only).
      for (int s = 0; s < P; ++s)
        for (int t = 0; t < TP; ++t) {
          const int owner = (hint.spec().device_of(s, 0) * TP + t) / o.devices_per_rank;
          auto bcast = [&](const torch::Tensor& x) {
            mpi_broadcast(x.data_ptr<float>(), static_cast<int>(x.numel() * sizeof(float)), owner);
          };
          const auto& ps = pipes[t]->stage(s).params();
          for (size_t i = 0; i < ps.size(); ++i) {
            bcast(ps[i].t);
            bcast(opts[t][s].exp_avg()[i]);
            bcast(opts[t][s].exp_avg_sq()[i]);
          }
        }
      if (mpi_rank != 0) return;
    }
    Checkpoint c;
    c.meta = ident;
    c.meta["format"] = "rrfp-train";
    c.meta["step"] = step;
    c.meta["seed"] = o.seed;
    c.meta["adam_steps"] = opts[0][0].steps();
    const SamplerState st = data->state();
    c.meta["sampler"] = {{"rng", {st.rng[0], st.rng[1], st.rng[2], st.rng[3]}}, {"sequences_drawn", st.sequences_drawn}};
    const auto& full = model().all_params();
    for (size_t i = 0; i < full.size(); ++i)
      c.tensors.push_back(
          to_ckpt("param/" + full[i].name, gather(full[i].name, [&](int t) { return member_model(t).all_params()[i].t; })));
    for (int s = 0; s < P; ++s) {
      const auto& ps = pipe().stage(s).params();
      for (size_t i = 0; i < ps.size(); ++i) {
        c.tensors.push_back(to_ckpt("adam_m/" + ps[i].name, gather(ps[i].name, [&](int t) { return opts[t][s].exp_avg()[i]; })));
        c.tensors.push_back(
            to_ckpt("adam_v/" + ps[i].name, gather(ps[i].name, [&](int t) { return opts[t][s].exp_avg_sq()[i]; })));
      }
    }
    save_checkpoint(o.checkpoint_dir, c);
  }

  void optimizer_step(int member, int s, int step, const std::vector<torch::Tensor>& gr) {
    if (fault.hits_optimizer(s, step))
      throw std::runtime_error(fmt::format("injected failure in the optimizer step of stage {} at step {} "
                                           "(RRFP_FAIL_TASK)", s, step));
    opts[member][s].step(gr);
  }

  // The plain LibTorch loop (no pipeline): the gradients of every stage.
  std::vector<std::vector<torch::Tensor>> plain_pass(std::vector<Microbatch> mbs, StepRecord& rec) {
    std::vector<std::vector<torch::Tensor>> grads(P);
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

  ExecOptions exec_options(int step) {
    ExecOptions eo;
    eo.policy = o.policy;
    eo.tensor_parallel = TP;
    // Each stage's AdamW step (each member's, with TP) is a StarPU task on
    // the stage's device, after all of its W/BW tasks (deterministic mode:
    // the microbatch gradients are summed in order there too).
    eo.stage_epilogue = [this, step](int i) {  // member * P + stage
      const int t = i / P, s = i % P;
      if (t == 0) opt_start[s] = secs(Clock::now() - t_run);
      one_intra_op_thread();
      optimizer_step(t, s, step, pipes[t]->stage_grads(s));
      if (t == 0) opt_end[s] = secs(Clock::now() - t_run);
    };
    eo.worker_init = warm_worker;
    eo.inflight_slack = o.inflight_slack;
    eo.link_delay_s = link_delays(o, step);
    std::int64_t elems = 1;
    for (auto x : msg_shape) elems *= x;
    eo.message_bytes = static_cast<std::size_t>(elems) * sizeof(float);
    if (!fault.task.empty() || o.task_hook)
      eo.task_hook = [this, step](int call) {
        fault.fail_if_hit(g, call % g.size(), step);
        if (o.task_hook) o.task_hook(call);
      };
    return eo;
  }

  // The passes of one step on StarPU (or replayed on this thread). Returns
  // true when the optimizer steps ran there too (as StarPU tasks).
  bool pipeline_pass(std::vector<Microbatch> mbs, int step, StepRecord& rec) {
    bool stepped = false;
    for (int t = 1; t < TP; ++t) pipes[t]->begin_step(mbs);
    if (tp_comm) tp_comm->clear_log();  // the collective logs are per step
    pipe().begin_step(std::move(mbs));
    // With tensor parallelism the executor calls this once per member,
    // with member * tasks + id.
    auto body = [&](int call, const TaskIo& io) {
      const int id = call % g.size(), member = call / g.size();
      if (member == 0) t_start[id] = secs(Clock::now() - t_run);
      const Task& t = g.task(id);
      std::optional<TpTaskScope> scope;
      if (TP > 1) scope.emplace(tp_comm.get(), t.device, member, id);
      pipes[member]->run(t.kind, t.stage, t.mb, io.in, io.out);
      if (member == 0) t_end[id] = secs(Clock::now() - t_run);
    };
    if (o.executor == "starpu") {
      const ExecOptions eo = exec_options(step);
      const ExecResult r = mpi ? mpi_executor(plan.mopt)(hint, body, eo) : execute(hint, body, eo);
      res.policy = r.policy;
      stepped = true;
      for (int s = 0; s < P && s < static_cast<int>(r.epilogue_worker.size()); ++s)
        for (int d = 0; d < r.devices; ++d)
          if (r.epilogue_worker[s] >= 0 && r.epilogue_worker[s] == r.device_worker[d]) rec.optimizer_device[s] = d;
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
    rec.loss = static_cast<float>(pipe().loss());
    if (mpi) mpi_broadcast(&rec.loss, sizeof rec.loss, plan.loss_rank);  // the last stage's rank has it
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

  // Every --checkpoint-every steps, and at the run's last step (the target's too).
  bool checkpoint_due(int step) const {
    if (o.checkpoint_dir.empty()) return false;
    return (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) || step == o.steps ||
           (res.target.reached && res.target.step == step);
  }

  // Totals, and the validation loss when one is due (not part of the step's time).
  void account(StepRecord& rec) {
    seconds_total += rec.step_s;
    tokens_total += rec.tokens;
    if (o.eval_every <= 0 || rec.step % o.eval_every != 0) return;
    rec.val_loss = eval_loss(model(), data->validation());
    if (o.target_loss > 0 && !res.target.reached && rec.val_loss <= o.target_loss)
      res.target = {o.target_loss, true, rec.step, seconds_total, tokens_total};
  }

  // --async: the steps up to the window's end (--window steps at most,
  // and never past a checkpoint) as one graph; their records are returned
  // one at a time.
  StepRecord async_step() {
    if (async_done.empty()) {
      int K = std::min(o.async_window, o.steps - next + 1);
      if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0)
        K = std::min(K, o.checkpoint_every - (next - 1) % o.checkpoint_every);
      if (o.eval_every > 0) K = std::min(K, o.eval_every - (next - 1) % o.eval_every);  // evaluate drained weights
      std::vector<std::vector<Microbatch>> batches;
      std::vector<double> toks;
      for (int k = 0; k < K; ++k) {
        batches.push_back(data->next());
        toks.push_back(data->tokens());
      }
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
      auto recs = async->run(
          next, std::move(batches), toks, eo,
          [this](int s, int step, const std::vector<torch::Tensor>& gr) { optimizer_step(0, s, step, gr); }, hooks);
      res.policy = async->policy();
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

  StepRecord step() {
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
    std::vector<std::vector<torch::Tensor>> grads;  // plain and replay (no tensor parallelism there)
    bool stepped = false;
    if (o.executor == "plain") {
      grads = plain_pass(std::move(mbs), rec);
    } else {
      stepped = pipeline_pass(std::move(mbs), step, rec);
      if (!stepped)
        for (int s = 0; s < P; ++s) grads.push_back(pipe().stage_grads(s));
    }
    // Without StarPU (plain loop, replay) the optimizer step ends the
    // iteration on this thread, stage by stage.
    if (!stepped)
      for (int s = 0; s < P; ++s) optimizer_step(0, s, step, grads[s]);
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

  TrainResult finish() {
    res.grad_buffer_bytes = o.executor == "plain" ? 0 : pipe().grad_buffer_bytes();
    if (!o.trace_path.empty() && mpi_rank == 0) write_chrome_trace(trace, o.trace_path);
    if (!o.json_path.empty() && mpi_rank == 0) write_train_json(o.json_path, o, res, b);
    return res;
  }

};

Trainer::Trainer(const TrainOptions& o) : impl_(std::make_unique<Impl>(o)) {}
Trainer::~Trainer() = default;
bool Trainer::done() const { return impl_->next > impl_->o.steps || impl_->res.target.reached; }
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
