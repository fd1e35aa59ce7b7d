#include "train/profile_model.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <thread>

#include "hints/gen_greedy.hpp"
#include "runtime/session.hpp"
#include "runtime/tp_comm.hpp"
#include "train/blas.hpp"
#include "train/data.hpp"
#include "train/mm_model.hpp"
#include "train/pipeline.hpp"
#include "train/seq_lengths.hpp"
#include "train/tp_model.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {

namespace {

using Clock = std::chrono::steady_clock;

struct Acc {
  double sum = 0, sq = 0;
  int n = 0;
  void add(double x) { sum += x, sq += x * x, ++n; }
  PassStats stats() const {
    const double mean = n ? sum / n : 0;
    return {mean, n > 1 ? std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1))) : 0.0};
  }
};

template <class F>
double timed(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pass times of every (layer, kind) inside real training steps on StarPU:
// a split-backward run and a fused one, one step of each in turn, so both
// forms meet the same machine (these VMs change speed within seconds).
void measure_on_workers(const ProfileOptions& po, TrainOptions o, const std::vector<int>& counts, std::vector<Acc>& f,
                        std::vector<Acc>& b, std::vector<Acc>& w, std::vector<Acc>& bw,
                        const std::function<void(const std::string&)>& progress) {
  const int S = static_cast<int>(counts.size()), D = po.devices, M = po.microbatches;
  std::vector<int> map(S);
  for (int s = 0; s < S; ++s) map[s] = s % D;  // every cut crosses devices, as a stage boundary does
  std::vector<std::unique_ptr<Trainer>> runs;
  std::vector<std::shared_ptr<Hint>> hints;
  for (bool split : {true, false}) {
    auto h = std::make_shared<Hint>();
    h->graph = std::make_shared<TaskGraph>(PipelineSpec::explicit_map(map, M, split));
    GreedyOptions go;
    go.cap.assign(D, M * ((S + D - 1) / D));
    go.duration = [](int) { return 1e-3; };
    greedy_schedule(*h, go);
    h->name = split ? "profile-split" : "profile-fused";
    o.hint_object = h;
    o.partition = counts;
    o.executor = "starpu";
    o.steps = po.repetitions + 1;
    runs.push_back(std::make_unique<Trainer>(o));
    hints.push_back(h);
  }
  for (int step = 0; step <= po.repetitions; ++step) {
    for (size_t k = 0; k < runs.size(); ++k) {
      StarpuSession::close_reused();  // each run starts its own workers, outside the timed passes
      const StepRecord r = runs[k]->step();
      if (step == 0) continue;  // warm-up
      const TaskGraph& g = *hints[k]->graph;
      for (int id = 0; id < g.size(); ++id) {
        const Task& t = g.task(id);
        std::vector<Acc>& acc = t.kind == Kind::F ? f : t.kind == Kind::B ? b : t.kind == Kind::W ? w : bw;
        acc[t.stage].add(r.task_s[id]);
      }
    }
    if (progress && step > 0 && (step % 5 == 0 || step == po.repetitions))
      progress(fmt::format("profile {}/{} steps (split and fused backward) on {} device{}{}", step, po.repetitions, D,
                           D > 1 ? "s" : "",
                           o.tensor_parallel > 1 ? fmt::format(" of {} workers", o.tensor_parallel) : ""));
  }
  for (auto& r : runs) r->finish();
  StarpuSession::close_reused();
}

// Per layer (a stage of `pipe`), its parameters' bytes (fp32).
std::vector<double> weight_bytes(const Pipeline& pipe, int layers) {
  std::vector<double> out(layers, 0);
  for (int s = 0; s < layers; ++s)
    for (const auto& np : pipe.stage(s).params()) out[s] += static_cast<double>(np.t.numel()) * 4;
  return out;
}

// Per layer, what member 0 of a T-way group holds (the members' are equal
// where the widths divide, which the model requires): its weight shard,
// and its activations for one microbatch at the end of its forward. The
// members' forwards run on T threads that meet in their all-reduces
// (LocalTpComm), as a group's workers do in training.
struct MemberSizes {
  std::vector<double> activation_bytes, weight_bytes;
};
MemberSizes member_sizes(const Model& full, int T, const std::vector<int>& counts,
                         const std::vector<std::int64_t>& msg, const std::vector<Microbatch>& mbs) {
  const int S = static_cast<int>(counts.size());
  LocalTpComm comm(1, T);
  std::vector<std::unique_ptr<Model>> shards;
  std::vector<std::unique_ptr<Pipeline>> pipes;
  for (int t = 0; t < T; ++t) {
    shards.push_back(tp_member(full, T, t));
    pipes.push_back(std::make_unique<Pipeline>(*shards.back(), S, 1, false, counts));
    pipes.back()->set_message_shape(msg);
  }
  std::vector<std::exception_ptr> failed(T);
  std::vector<std::thread> members;
  for (int t = 0; t < T; ++t)
    members.emplace_back([&, t] {
      try {
        pipes[t]->begin_step(mbs);
        for (int s = 0; s < S; ++s) {
          TpTaskScope scope(&comm, 0, t, s);  // the layer's forward is the collective's task
          pipes[t]->forward(s, 0);
        }
      } catch (...) {
        failed[t] = std::current_exception();
      }
    });
  for (auto& m : members) m.join();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
  const auto peaks = pipes[0]->peak_activation_bytes();
  return {{peaks.begin(), peaks.end()}, weight_bytes(*pipes[0], S)};
}

}  // namespace

ModelProfile profile_model(const ProfileOptions& po, const std::function<void(const std::string&)>& progress) {
  TrainOptions o = po.model;
  o.stages = 1;
  o.microbatches = 1;
  check_options(o);
  if (po.repetitions < 1) throw SpecError("--repetitions must be at least 1");
  if (po.executor != "starpu" && po.executor != "plain")
    throw SpecError(fmt::format("unknown profile executor '{}' (starpu, plain)", po.executor));
  if (po.executor == "starpu" && (po.devices < 1 || po.microbatches < 1))
    throw SpecError("rrfp profile: --devices and --microbatches must be at least 1");
  if (o.seq_len_dist != "fixed") throw SpecError("rrfp profile measures full-length sequences: drop --seq-len-dist");
  const int T = o.tensor_parallel;
  if (T > 1 && po.executor != "starpu")
    throw SpecError("rrfp profile --tensor-parallel needs --executor starpu: a member's passes meet its group's "
                    "all-reduces, which only concurrent workers run");
  one_intra_op_thread();
  const bool mm = o.model == "mm-tiny";
  std::unique_ptr<Model> model;
  if (mm)
    model = std::make_unique<MmModel>(o.gpt, o.enc_layers, o.seed);
  else
    model = std::make_unique<GptModel>(o.gpt, o.seed);
  const int L = model->blocks(), S = L + 2;
  // Each layer is a stage of the profiling run, placed round-robin: a
  // device with no layer would have nothing to measure.
  if (po.executor == "starpu" && po.devices > S)
    throw SpecError(fmt::format("rrfp profile: --devices {} is more than the model's {} layers (embedding, {} blocks, "
                                "head); profile on at most {} devices (a profile is per layer, not per device)",
                                po.devices, S, L, S));
  std::vector<int> counts(S, 1);
  counts.front() = counts.back() = 0;  // the first and the last layer alone
  const int b = o.batch_size > 0 ? o.batch_size : o.micro_batch_size;
  if (T > 1) check_tp_stages(*model, model->partition(S, counts));
  Pipeline pipe(*model, S, 1, false, counts);
  const std::vector<std::int64_t> msg = {b, mm ? kPrefix + kCaption : o.gpt.seq_len, o.gpt.d_model};
  pipe.set_message_shape(msg);

  std::unique_ptr<Sampler> text;
  std::unique_ptr<ImageSampler> images;
  if (mm) {
    images = std::make_unique<ImageSampler>(o.seed ^ 0x1a6eULL);
  } else {
    auto corpus = std::make_shared<const std::string>(o.data_path.empty() ? generate_corpus(o.seed, 1 << 19)
                                                                            : load_text(o.data_path));
    text = std::make_unique<Sampler>(corpus, o.gpt.seq_len, o.seed ^ 0xda7aULL);
  }
  auto batch = [&] {
    if (mm) return make_image_microbatches(images->next(b), 1, b);
    return make_microbatches(text->next(b), 1, b, o.gpt.seq_len);
  };

  std::vector<Acc> f(S), bi(S), w(S), bw(S);
  std::vector<double> act(S, 0);
  const bool plain = po.executor == "plain";
  for (int rep = 0; rep <= (plain ? po.repetitions : 0); ++rep) {
    const bool keep = rep > 0;  // the first round warms caches and the allocator up
    // Split backward: F down, B up, then every W.
    pipe.begin_step(batch());
    for (int s = 0; s < S; ++s) {
      const double t = timed([&] { pipe.forward(s, 0); });
      if (keep) f[s].add(t);
    }
    const auto peaks = pipe.peak_activation_bytes();
    for (int s = 0; s < S; ++s) act[s] = std::max(act[s], static_cast<double>(peaks[s]));
    for (int s = S - 1; s >= 0; --s) {
      const double t = timed([&] { pipe.backward_input(s, 0); });
      if (keep) bi[s].add(t);
    }
    for (int s = 0; s < S; ++s) {
      const double t = timed([&] { pipe.backward_weight(s, 0); });
      if (keep) w[s].add(t);
    }
    // Fused backward on a new microbatch.
    pipe.begin_step(batch());
    for (int s = 0; s < S; ++s) pipe.forward(s, 0);
    for (int s = S - 1; s >= 0; --s) {
      const double t = timed([&] { pipe.backward_full(s, 0); });
      if (keep) bw[s].add(t);
    }
    if (progress && keep && (rep % 5 == 0 || rep == po.repetitions))
      progress(fmt::format("profile {}/{} repetitions", rep, po.repetitions));
  }
  if (!plain) measure_on_workers(po, o, counts, f, bi, w, bw, progress);
  std::vector<double> weights = weight_bytes(pipe, S);
  if (T > 1) {
    MemberSizes m = member_sizes(*model, T, counts, msg, batch());
    act = std::move(m.activation_bytes);
    weights = std::move(m.weight_bytes);
  }

  ModelProfile p;
  p.model = o.model;
  p.config = gpt_json(o.gpt);
  if (mm) p.config["enc_layers"] = o.enc_layers;
  p.micro_batch_size = b;
  p.repetitions = po.repetitions;
  p.machine = plain ? fmt::format("plain: one pass at a time on one thread; {}", blas_in_use().describe())
                    : fmt::format("starpu: {} CPU workers{}, {} microbatches a step; {}, one thread per worker",
                                  po.devices * T,
                                  T > 1 ? fmt::format(" ({} devices, each a tensor-parallel group of {})",
                                                      po.devices, T)
                                        : "",
                                  po.microbatches, blas_in_use().describe());
  p.tensor_parallel = T;
  p.executor = po.executor;
  p.workers = plain ? 1 : po.devices * T;
  double msg_bytes = 4;
  for (auto d : msg) msg_bytes *= static_cast<double>(d);
  for (int s = 0; s < S; ++s) {
    LayerProfile l;
    l.name = s == 0 ? (mm ? "vision" : "embed") : s + 1 == S ? "head" : fmt::format("block{}", s - 1);
    l.f = f[s].stats();
    l.b = bi[s].stats();
    l.w = w[s].stats();
    l.bw = bw[s].stats();
    l.activation_bytes = act[s];
    l.weight_bytes = weights[s];
    p.layers.push_back(std::move(l));
    if (s + 1 < S) p.message_bytes.push_back(msg_bytes);
  }
  return p;
}

}  // namespace rrfp::train
