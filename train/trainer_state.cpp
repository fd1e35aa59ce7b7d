// Checkpoints of a training run (whole model, whatever the tensor-parallel
// width) and, under mpirun, sharing each rank's stages with the others.
#include <fmt/format.h>

#include "mpi/mpi_session.hpp"
#include "train/trainer_impl.hpp"

namespace rrfp::train {

torch::Tensor Trainer::Impl::gather(const std::string& name, const MemberTensor& member_tensor) const {
  if (TP == 1) return member_tensor(0);
  std::vector<torch::Tensor> parts;
  for (int t = 0; t < TP; ++t) parts.push_back(member_tensor(t));
  return unshard(parts, shard_spec(name));
}

void Trainer::Impl::scatter(const Checkpoint& c, const std::string& key, const std::string& name,
                            const torch::Tensor& like, const MemberTensor& member_tensor,
                            const std::string& where) const {
  torch::Tensor full = TP == 1 ? member_tensor(0) : torch::empty(like.sizes(), torch::kFloat32);
  from_ckpt(c, key, full, where);
  torch::NoGradGuard ng;
  for (int t = 0; t < TP && TP > 1; ++t) member_tensor(t).copy_(shard_of(full, shard_spec(name), t, TP));
}

void Trainer::Impl::resume() {
  const Checkpoint c = load_checkpoint(o.checkpoint_dir);
  const std::string where = checkpoint_path(o.checkpoint_dir);
  nlohmann::json meta = c.meta;
  // Written before these keys existed (2026-12-05): what they guard
  // cannot be told from such a file, so it is taken as this run's.
  if (!meta.contains("data") && ident.contains("data")) meta["data"] = ident["data"];
  if (o.model == "mm-tiny") meta.erase("validation");  // older mm-tiny files had it; it changes no mm-tiny data
  if (meta.contains("gpt")) canonical_gpt_json(meta["gpt"]);  // default widths spelled out by an older file
  check_identity(ident, meta, where);
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

void Trainer::Impl::share_stage_state(bool moments) {
  for (int s = 0; s < P; ++s)
    for (int t = 0; t < TP; ++t) {
      const int owner = stage_owner(s, t);
      auto bcast = [&](const torch::Tensor& x) {
        if (x.is_cpu()) return mpi_broadcast(x.data_ptr<float>(), static_cast<int>(x.numel() * sizeof(float)), owner);
        torch::Tensor h = x.to(torch::kCPU).contiguous();  // --cuda: MPI moves host memory
        mpi_broadcast(h.data_ptr<float>(), static_cast<int>(h.numel() * sizeof(float)), owner);
        torch::NoGradGuard no_grad;
        x.copy_(h);
      };
      const auto& ps = pipes[t]->stage(s).params();
      for (size_t i = 0; i < ps.size(); ++i) {
        bcast(ps[i].t);
        if (!moments) continue;
        bcast(opts[t][s].exp_avg()[i]);
        bcast(opts[t][s].exp_avg_sq()[i]);
      }
      if (!moments) continue;
      // The owner's count of updates: a copy elsewhere never stepped, and
      // AdamW's bias correction would restart from it on resume.
      std::int64_t steps = opts[t][s].steps();
      mpi_broadcast(&steps, sizeof steps, owner);
      opts[t][s].set_steps(steps);
    }
}

void Trainer::Impl::check_finite_before_saving(int step) {
  auto check = [step](const torch::Tensor& x, const std::string& what) {
    if (!torch::isfinite(x).all().item<bool>())
      throw SpecError(fmt::format("step {}: the update left non-finite values in {}: the run diverged (a lower "
                                  "--lr?); the checkpoint of this step was not written, the last one is kept",
                                  step, what));
  };
  torch::NoGradGuard no_grad;
  for (int t = 0; t < TP; ++t)
    for (int s = 0; s < P; ++s) {
      const auto& ps = pipes[t]->stage(s).params();
      for (size_t i = 0; i < ps.size(); ++i) {
        check(ps[i].t, "'" + ps[i].name + "'");
        check(opts[t][s].exp_avg()[i], "the AdamW moments of '" + ps[i].name + "'");
        check(opts[t][s].exp_avg_sq()[i], "the AdamW moments of '" + ps[i].name + "'");
      }
    }
}

void Trainer::Impl::save(int step) {
  if (mpi) share_stage_state(true);
  check_finite_before_saving(step);  // every rank holds the same weights now, so all stop alike
  if (mpi && mpi_rank != 0) return;  // rank 0 writes the whole state
  Checkpoint c;
  c.meta = ident;
  c.meta["format"] = "rrfp-train";
  c.meta["step"] = step;
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

}  // namespace rrfp::train
