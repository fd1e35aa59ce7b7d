// Checkpoints of a training run (whole model, whatever the tensor-parallel
// width) and, under mpirun, sharing each rank's stages with the others.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "mpi/mpi_session.hpp"
#include "sim/json_file.hpp"
#include "train/trainer_impl.hpp"

namespace rrfp::train {

namespace {

// A header number the resumed run depends on: an integer in [lo, hi].
std::int64_t header_int(const nlohmann::json& v, const std::string& key, double lo, double hi,
                        const std::string& where) {
  if (!v.is_number_integer() || v.get<double>() < lo || v.get<double>() > hi)
    throw CheckpointError(fmt::format("checkpoint '{}': '{}' = {} must be an integer from {:.0f} to {:.0f}", where,
                                      key, v.dump(), lo, hi));
  return v.get<std::int64_t>();
}

// What a run never writes (a checkpoint is saved only after a finite
// update): weights or moments that are not finite, a negative second moment.
void check_loaded(const torch::Tensor& x, const std::string& name, bool second_moment, const std::string& where) {
  torch::NoGradGuard no_grad;
  if (!torch::isfinite(x).all().item<bool>())
    throw CheckpointError(fmt::format("checkpoint '{}': '{}' holds values that are not finite", where, name));
  if (second_moment && (x < 0).any().item<bool>())
    throw CheckpointError(fmt::format("checkpoint '{}': '{}' holds negative values (a second moment)", where, name));
}

}  // namespace

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
  if (c.meta.contains("format") && c.meta["format"] != "rrfp-train")
    throw CheckpointError(fmt::format("checkpoint '{}' is a {} file, not a training checkpoint (rrfp-train)", where,
                                      c.meta["format"].dump()));
  try {
    // The counts first: a step that does not fit would wrap, and resume a
    // run that never ends (or restart one silently).
    const std::int64_t step = header_int(c.meta.at("step"), "step", 1, std::numeric_limits<int>::max() - 1, where);
    const std::int64_t adam_steps = header_int(c.meta.at("adam_steps"), "adam_steps", 0, static_cast<double>(step), where);
    SamplerState st;
    const auto& rng = c.meta.at("sampler").at("rng");
    if (!rng.is_array() || rng.size() != 4)
      throw CheckpointError(fmt::format("checkpoint '{}': 'sampler.rng' must list 4 integers", where));
    bool any = false;
    for (int i = 0; i < 4; ++i) {
      if (!rng[i].is_number_unsigned())
        throw CheckpointError(fmt::format("checkpoint '{}': 'sampler.rng' holds {}, not an unsigned 64-bit integer",
                                          where, rng[i].dump()));
      st.rng[i] = rng[i].get<std::uint64_t>();
      any = any || st.rng[i] != 0;
    }
    if (!any)  // xoshiro's one state that never leaves itself
      throw CheckpointError(fmt::format("checkpoint '{}': 'sampler.rng' is all zeros, not a generator's state", where));
    st.sequences_drawn = static_cast<std::uint64_t>(
        header_int(c.meta.at("sampler").at("sequences_drawn"), "sampler.sequences_drawn", 0, 9007199254740992.0, where));
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
      for (int t = 0; t < TP; ++t) opts[t][s].set_steps(adam_steps);
    }
    // Every tensor the file holds is one the run loaded, once: a file of
    // another model version or an edited one is not half read.
    std::set<std::string> wanted, seen;
    for (const auto& p : full) wanted.insert("param/" + p.name);
    for (int s = 0; s < P; ++s)
      for (const auto& p : pipe().stage(s).params()) wanted.insert("adam_m/" + p.name), wanted.insert("adam_v/" + p.name);
    for (const CkptTensor& t : c.tensors) {
      if (!wanted.count(t.name))
        throw CheckpointError(fmt::format("checkpoint '{}' holds a tensor '{}' this model does not have", where, t.name));
      if (!seen.insert(t.name).second)
        throw CheckpointError(fmt::format("checkpoint '{}' holds the tensor '{}' twice", where, t.name));
      const bool second = t.name.rfind("adam_v/", 0) == 0;
      check_loaded(torch::from_blob(const_cast<float*>(t.data.data()), {static_cast<std::int64_t>(t.data.size())}),
                   t.name, second, where);
    }
    data->set_state(st);
    res.first_step = static_cast<int>(step) + 1;
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("checkpoint '{}' has an incomplete header: {}", where, json_reason(e)));
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
