// The training loop behind `rrfp train`. Torch-free interface: the driver and
// the tests include this without paying for torch headers.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "train/config.hpp"
#include "train/lr_schedule.hpp"

namespace rrfp::train {

struct TrainOptions {
  std::string model = "gpt-tiny";  // or gpt-small (gpt_small_defaults), mm-tiny
  GptConfig gpt;                   // mm-tiny: its language model
  int enc_layers = 2;              // mm-tiny: vision encoder blocks
  int stages = 2;            // pipeline devices
  int chunks = 0;            // model stages per device (interleaved hints); 0 = hint default
  int split = -1;            // -1 hint default, 0 fused BW, 1 split B+W
  int microbatches = 4;      // per data-parallel replica (as Megatron's); all of them after resolve_run
  // --data-parallel D: D replicas of the pipeline, each on its own devices
  // with its own microbatches, a stage's copies reducing their gradients
  // before its update (hints/replicate.hpp, docs/data-parallel.md).
  int data_parallel = 1;
  int micro_batch_size = 4;  // sequences per microbatch
  int batch_size = 0;        // if set: sequences per step, must divide by microbatches
  int steps = 60;            // train until this step number
  std::string hint = "1f1b";
  // A hint built in code (rrfp profile) instead of `hint`; it fixes stages
  // and microbatches.
  std::shared_ptr<const Hint> hint_object;
  // Blocks per model stage (`--partition 1,3`); empty = the even split.
  std::vector<int> partition;
  // `--plan FILE` (rrfp tune): its partition, placement and hint replace
  // --partition, --hint, --stages, --chunks and --microbatches (docs/tuner.md).
  std::string plan_path;
  std::string data_path;     // "" = generated corpus
  // gpt-tiny: per-sequence lengths (train/seq_lengths.hpp); "fixed" = all --seq-len.
  std::string seq_len_dist = "fixed";
  double lr = 3e-3;         // the peak rate of the schedule below
  // --lr-warmup, --lr-decay, --lr-decay-steps (0: --steps), --min-lr (NaN:
  // lr / 10): see lr_schedule(), train/lr_schedule.hpp.
  int lr_warmup = 0;
  std::string lr_decay = "constant";
  int lr_decay_steps = 0;
  double min_lr = std::numeric_limits<double>::quiet_NaN();  // NaN: not given
  // --clip-grad: the gradient's L2 norm clipped to this before each update
  // (0: off): the whole model's norm, each stage's own under --async
  // (train/grad_clip.hpp).
  double clip_grad = 0;
  std::uint64_t seed = 1;
  bool deterministic = false;
  std::string checkpoint_dir;
  int checkpoint_every = 0;  // steps; 0 = only at the end when a dir is given
  bool resume = false;
  std::string json_path, trace_path;
  // starpu: the StarPU executor (policy from STARPU_SCHED or `policy`);
  // replay: the passes in the hint's strict unit-cost order, one thread;
  // plain: the LibTorch reference loop, no pipeline (perf baseline).
  std::string executor = "starpu";
  std::string policy;        // "" = STARPU_SCHED
  // The model on a GPU (docs/gpu.md, "Training on a GPU"): starpu: every
  // device a CUDA worker of that GPU, each pass on its worker's stream;
  // plain: the reference loop on the GPU. CUDA builds only.
  bool cuda = false;
  // Several ranks (drivers: started by mpirun/srun, or RRFP_MPI=1): the
  // StarPU-MPI executor, devices_per_rank devices on each (docs/mpi.md).
  bool multi_rank = false;
  int devices_per_rank = 1;
  bool ordered_channels = false;  // messages between ranks through ordered channels (mpi/ordered_channels.hpp)
  // Stage copies on several ranks (Chimera, --data-parallel): "overlap"
  // reduces their gradients beside the graph, a pair after the other once
  // this rank's passes of it are done (train/mirror_overlap.hpp);
  // "after-graph" after it; "auto": beside it where the rank has cores to
  // spare (rank_has_spare_core). "" = auto, not asked for: given, it is
  // refused where it would change nothing (one process, --async, no stage
  // with copies on several ranks).
  std::string mirror_reduce;
  int tensor_parallel = 1;   // members per device, Megatron-style (train/tp_model.hpp)
  double mpi_timeout_s = 0;  // under mpirun: seconds without progress on a rank; 0 = the executor's default
  // "" = synchronous (a flush every step); "paci": no flush, per-stage
  // updates after every `microbatches` backwards; "amdp": `directions`
  // pipelines over the devices, each stage updating once per step of
  // `microbatches`, at most two steps in flight (docs/async.md).
  std::string async_mode;
  int directions = 2;        // --async amdp: 2 (P even) or 4 (P divisible by 4)
  int async_window = 8;      // --async: steps per graph (it drains only at a window's end)
  // Evaluation (docs/async.md, "Time to a target loss"): every eval_every
  // steps the validation loss of eval_microbatches held-out microbatches
  // (gpt-tiny: the last tenth of the corpus, which training then leaves
  // out; mm-tiny: images of their own seed), without gradients. With
  // target_loss > 0 the run stops once that loss is reached.
  int eval_every = 0;
  int eval_microbatches = 8;
  double target_loss = 0;
  int inflight_slack = 0;    // rrfp policies: raise each device's in-flight cap by this (drivers: RRFP_INFLIGHT_SLACK)
  // Emulated link: every message between devices is held this long after
  // it arrived, uniform in link_ms * (1 +- link_jitter), drawn per step and
  // edge from the seed (the same on every rank); reorders arrivals.
  double link_ms = 0, link_jitter = 0;
  // Tests: this task (a label, or opt<s>: stage s's optimizer step) throws,
  // at step fail_step only when >= 1 (drivers: RRFP_FAIL_TASK, RRFP_FAIL_STEP).
  std::string fail_task;
  int fail_step = -1;
  std::function<void(int call)> task_hook;  // tests: called before every pass (ExecOptions::task_hook)
};

struct StepRecord {
  int step = 0;
  double loss = 0;
  double step_s = 0;
  double tokens_per_s = 0;
  double bubble_ratio = 0;                // measured idle share of the devices
  double busy_s = 0;                      // sum over devices of the time spent in passes
  std::int64_t peak_activation_bytes = 0; // max over stages
  std::vector<std::int64_t> peak_activation_per_stage;
  // Per device: the peak of its stages' sum (interleaved and V-shape
  // placements hold several stages on one device); empty under MPI.
  std::vector<std::int64_t> peak_activation_per_device;
  // Per task id of the step's graph: the time its pass ran, in seconds
  // (rrfp profile reads it; tasks of other ranks: 0).
  std::vector<double> task_s;
  // Per model stage: the device whose StarPU worker ran the stage's
  // optimizer step (an epilogue task), or -1 where the main thread ran it
  // (replay and plain executors) or another rank did.
  std::vector<int> optimizer_device;
  // --async, per model stage: the most and the mean of the updates a
  // microbatch's backward saw that its forward had not, over this step's
  // microbatches, and the method's bound (docs/async.md). Empty when synchronous.
  std::vector<int> drift_max, drift_bound;
  std::vector<double> drift_mean;
  // --async --deterministic: this step's forwards that started after an
  // update later than their pinned version and so ran on an older copy of
  // their stage's weights (docs/async.md, "Reproducible PACI").
  int late_forwards = 0;
  double tokens = 0;     // trained this step
  double val_loss = -1;  // --eval-every: the validation loss after this step; < 0: not evaluated
  // --clip-grad, synchronous: the whole model's gradient norm before the
  // clip; < 0: not taken (no clip, or --async, where each stage clips alone).
  double grad_norm = -1;
  // --clip-grad, per model stage: the stage's own norm before the clip of
  // its update of this step (synchronous: its part of grad_norm). Empty
  // without --clip-grad.
  std::vector<double> stage_grad_norm;
};

// --target-loss: when the validation loss first reached it, counted in
// training time (StarPU's start-up and the evaluations left out) and tokens
// since this run (or its resume) began.
struct TargetReport {
  double loss = 0;
  bool reached = false;
  int step = -1;
  double seconds = 0, tokens = 0;
};

struct TrainResult {
  std::string policy;     // as reported by the executor
  int model_stages = 0;
  int first_step = 1;     // > 1 after --resume
  std::int64_t grad_buffer_bytes = 0;  // gradient buffers at the end of a step
  std::vector<StepRecord> steps;
  TargetReport target;  // meaningful with TrainOptions::target_loss > 0
  // Under mpirun with stage copies on several ranks: how this rank reduced
  // them ("overlap" or "after-graph", TrainOptions::mirror_reduce
  // resolved); "" where nothing was reduced between ranks.
  std::string mirror_reduce;
};

// One run, a step at a time: what train() does, exposed so that a benchmark
// can interleave the steps of several runs in one process (perf/bench_train_ab).
// The constructor validates, builds the model and resumes; step() trains the
// next step and writes the checkpoint when one is due; finish() writes
// --json and --trace. Errors as for train().
class Trainer {
 public:
  explicit Trainer(const TrainOptions& opt);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  bool done() const;       // the last step (TrainOptions::steps) is trained
  int next_step() const;   // the step that step() trains
  StepRecord step();
  TrainResult finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The learning-rate schedule the options describe, defaults resolved
// (train/lr_schedule.hpp): step k's updates run at lr_schedule(o).at(k).
LrSchedule lr_schedule(const TrainOptions& o);

// One replica's microbatches of a step (--microbatches or --accumulate as
// given): after resolve_run o.microbatches counts every replica's.
inline int replica_share(const TrainOptions& o) { return o.microbatches / (o.data_parallel > 1 ? o.data_parallel : 1); }

// Throws SpecError (bad options, bad data, bad checkpoint) or the executor's
// error (a failing task). Checkpoints are written only after a step
// completed, so a failure leaves the previous one in place.
TrainResult train(const TrainOptions& opt, const std::function<void(const StepRecord&)>& on_step = {});

}  // namespace rrfp::train
