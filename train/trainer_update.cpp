// The updates that run on the main thread after a step's graph: Chimera's
// mirrored stages under mpirun, the plain and replay executors' updates,
// and every update under --clip-grad, whose factor needs the whole
// model's gradient norm first (docs/training.md, "Gradient-norm clipping").
#include <fmt/format.h>

#include <cmath>

#include "mpi/mpi_session.hpp"
#include "train/grad_clip.hpp"
#include "train/mirror_reduce.hpp"
#include "train/reference.hpp"
#include "train/trainer_impl.hpp"

namespace rrfp::train {

void Trainer::Impl::mirror_update(int step) {
  mirror_reduce(pipes, plan, mpi_rank);
  for (int s = 0; s < P; ++s)
    for (int t = 0; t < TP; ++t) {
      const int i = plan.at(s, t);
      if (!plan.mirror[i].empty() && plan.local[i]) update_mirrored(s, t, step);
    }
}

void Trainer::Impl::update_mirrored(int s, int t, int step) {
  one_intra_op_thread();
  optimizer_step(t, s, step, pipes[t]->stage_grads(s));
}

std::unique_ptr<MirrorOverlap> Trainer::Impl::mirror_overlap(int step, bool updates_in_graph) {
  if (res.mirror_reduce != "overlap") return nullptr;  // resolved once, in the constructor
  MirrorOverlap::Update update;  // --clip-grad: after the graph, once the model's norm is known
  if (updates_in_graph) update = [this, step](int s, int t) { update_mirrored(s, t, step); };
  return std::make_unique<MirrorOverlap>(pipes, plan, mpi_rank, std::move(update));
}

bool Trainer::Impl::updates_here(int s, int t) const {
  // Every holder of a member of a stage updates it (a mirrored one after
  // its reduction).
  return !mpi || plan.local[plan.at(s, t)];
}

double Trainer::Impl::member_sq_norm(int s, int t, const std::vector<torch::Tensor>& grads) const {
  if (TP == 1 || grads.empty()) return grad_sq_norm(grads);
  // Every member holds the replicated parameters' gradients, bitwise
  // equal: member 0 counts them, every member its shards (Megatron's norm).
  const auto& ps = pipes[t]->stage(s).params();
  std::vector<torch::Tensor> counted;
  for (size_t i = 0; i < ps.size(); ++i)
    if (t == 0 || shard_spec(ps[i].name).dim >= 0) counted.push_back(grads[i]);
  return grad_sq_norm(counted);
}

void Trainer::Impl::update_after_graph(int step, std::vector<std::vector<torch::Tensor>>& grads, StepRecord& rec) {
  // The copies' sums first (beside the graph, done already): the norm counts a stage once.
  if (mpi && res.mirror_reduce != "overlap") mirror_reduce(pipes, plan, mpi_rank);
  // Per member and stage: the plain loop's gradients, or the pipeline's
  // sums of the stages (and members) this rank updates.
  std::vector<std::vector<std::vector<torch::Tensor>>> member_grads(TP, std::vector<std::vector<torch::Tensor>>(P));
  for (int t = 0; t < TP; ++t)
    for (int s = 0; s < P; ++s)
      if (t == 0 && !grads.empty())
        member_grads[0][s] = grads[s];
      else if (updates_here(s, t))
        member_grads[t][s] = pipes[t]->stage_grads(s);
  if (o.clip_grad > 0) {
    // Per stage and member, from its owner (Megatron all-reduces the
    // squared norm over pipeline and tensor-parallel ranks), then summed in
    // one order: every rank count gives one process's norm, bit for bit.
    std::vector<double> sq(static_cast<size_t>(P) * TP, 0.0);
    for (int s = 0; s < P; ++s)
      for (int t = 0; t < TP; ++t)
        if (!mpi || stage_owner(s, t) == mpi_rank) sq[s * TP + t] = member_sq_norm(s, t, member_grads[t][s]);
    if (mpi) mpi_sum_in_place(sq.data(), static_cast<int>(sq.size()));
    double total = 0;
    rec.stage_grad_norm.assign(P, 0.0);
    for (int s = 0; s < P; ++s) {
      double stage = 0;
      for (int t = 0; t < TP; ++t) stage += sq[s * TP + t];
      rec.stage_grad_norm[s] = std::sqrt(stage);
      total += stage;
    }
    rec.grad_norm = std::sqrt(total);
    const double f = clip_factor(rec.grad_norm, o.clip_grad);
    for (auto& member : member_grads)
      for (auto& gr : member) scale_grads(gr, f);
  }
  // The main thread's updates go on the stage's device track of --trace,
  // as the epilogue tasks' do (under MPI each rank knows only its own: left out).
  const bool traced = !o.trace_path.empty() && !mpi && o.executor != "plain";
  for (int s = 0; s < P; ++s)
    for (int t = 0; t < TP; ++t) {
      if (!updates_here(s, t)) continue;
      const double t0 = secs(Clock::now() - t_run);
      optimizer_step(t, s, step, member_grads[t][s]);
      if (traced && t == 0)
        trace.slices.push_back({g.spec().device_of(s, 0), fmt::format("opt{}", s), t0, secs(Clock::now() - t_run)});
    }
}

double Trainer::Impl::validation_loss() {
  // With tensor parallelism the full model is evaluated: the members'
  // shards are gathered into it first (as a checkpoint does).
  // Under mpirun rank 0 evaluates the whole model, its stages' owners'
  // weights; every rank gets the loss, so all stop alike.
  if (mpi) share_stage_state(false);
  double loss = -1;
  if (mpi_rank == 0) {
    torch::NoGradGuard no_grad;
    const auto& full = model().all_params();
    for (size_t i = 0; i < full.size() && TP > 1; ++i)
      full[i].t.copy_(gather(full[i].name, [&](int t) { return member_model(t).all_params()[i].t; }));
    loss = eval_loss(model(), data->validation());
  }
  if (mpi) mpi_broadcast(&loss, sizeof loss, 0);
  return loss;
}

}  // namespace rrfp::train
