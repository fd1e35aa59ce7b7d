// The state of one training run between steps (Trainer's pimpl), shared by
// trainer.cpp (set-up, the synchronous step), trainer_update.cpp (the
// updates after the graph, clipping, evaluation), trainer_state.cpp
// (checkpoints, sharing weights between ranks) and trainer_async.cpp (the
// --async windows). Private to train/.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plot/timeline.hpp"
#include "runtime/executor.hpp"
#include "runtime/tp_comm.hpp"
#include "train/adamw.hpp"
#include "train/async_window.hpp"
#include "train/batch_source.hpp"
#include "train/checkpoint.hpp"
#include "train/cuda_stream.hpp"
#include "train/mirror_overlap.hpp"
#include "train/mpi_train.hpp"
#include "train/pipeline.hpp"
#include "train/run_shape.hpp"
#include "train/tp_model.hpp"
#include "train/trainer.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {

// Everything one run holds between steps. Built (and resumed) by the
// constructor, advanced by step(), reported by finish().
struct Trainer::Impl {
  using Clock = std::chrono::steady_clock;
  static double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

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
  // pipelines[t] holds its passes' state (train/tp_model.hpp; mm-tiny's
  // are MmModel shards).
  std::vector<std::unique_ptr<Model>> shards;
  std::unique_ptr<BatchSource> data;  // training and validation microbatches
  std::vector<std::unique_ptr<Pipeline>> owned_pipes;
  std::vector<Pipeline*> pipes;  // per member; pipes[0] is the leader's
  std::unique_ptr<TpComm> tp_comm;
  MpiTrainPlan plan;
  std::vector<std::vector<AdamW>> opts;  // per member, per stage
  std::vector<size_t> stage_begin;       // first global param index of each stage
  nlohmann::json ident;
  std::uint32_t workload_key = 0;  // ExecOptions::workload_key: the model's shape
  TrainResult res;
  int next = 1;                          // the step step() trains
  const Fault fault{o.fail_task, o.fail_step};
  double predicted_bubble = 0;
  std::vector<int> order;                // replay executor
  MemoryBudgetOptions memory_budget;     // --plan with a memory limit (run_shape.hpp)
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
  explicit Impl(Resolved r);

  const Model& model() const { return *model_ptr; }
  const Model& member_model(int t) const { return TP > 1 ? *shards[t] : model(); }
  Pipeline& pipe() { return *pipes[0]; }

  // Checkpoints hold the full model whatever TP is: members' shards are
  // gathered on save and split on resume (same file as a TP = 1 run).
  using MemberTensor = std::function<torch::Tensor(int member)>;
  torch::Tensor gather(const std::string& name, const MemberTensor& member_tensor) const;
  void scatter(const Checkpoint& c, const std::string& key, const std::string& name, const torch::Tensor& like,
               const MemberTensor& member_tensor, const std::string& where) const;

  void resume();

  // Under mpirun each rank updated only its own stages (and members):
  // their owners broadcast the parameters (and the AdamW moments), so every
  // rank holds the whole model (MPI between steps only).
  void share_stage_state(bool moments);
  // The rank that owns member t of stage s (its first device's): it updates
  // the stage and broadcasts it.
  int stage_owner(int s, int t = 0) const { return (hint.spec().device_of(s, 0) * TP + t) / o.devices_per_rank; }
  // A diverged update must not replace the last good checkpoint.
  void check_finite_before_saving(int step);

  void save(int step);

  void optimizer_step(int member, int s, int step, const std::vector<torch::Tensor>& gr);

  // The plain LibTorch loop (no pipeline): the gradients of every stage.
  std::vector<std::vector<torch::Tensor>> plain_pass(std::vector<Microbatch> mbs, StepRecord& rec);

  ExecOptions exec_options(int step);
  // --cuda: opens StarPU's CUDA workers (before torch touches the GPU) and
  // returns the GPU they are on; one GPU for now.
  torch::Device cuda_device();

  // The passes of one step on StarPU (or replayed on this thread). Returns
  // true when the optimizer steps ran there too (as StarPU tasks).
  bool pipeline_pass(std::vector<Microbatch> mbs, int step, StepRecord& rec);

  // Under mpirun with a bidirectional hint: the stages whose copies live on
  // several ranks reduce their gradients between those ranks
  // (train/mirror_reduce.hpp), and each holder applies the update.
  void mirror_update(int step);
  void update_mirrored(int s, int t, int step);  // member t of stage s, after its reduction
  // The same beside the graph (--mirror-reduce overlap, or auto with cores
  // to spare); null where no stage is mirrored or it runs after the graph.
  std::unique_ptr<MirrorOverlap> mirror_overlap(int step, bool updates_in_graph);

  // The updates on this thread, after the graph (plain and replay
  // executors, and --clip-grad, whose norm needs every stage's gradient):
  // `grads` per model stage (the plain loop's), or empty for the
  // pipeline's. With --clip-grad, records the model's norm in `rec`.
  // With --tensor-parallel every member's, and the norm counts the
  // members' shards and the replicated parameters once (trainer_update.cpp).
  void update_after_graph(int step, std::vector<std::vector<torch::Tensor>>& grads, StepRecord& rec);
  // Whether this process updates member t of stage s (under mpirun: its rank holds it).
  bool updates_here(int s, int t) const;
  // Member t's part of stage s's squared gradient norm.
  double member_sq_norm(int s, int t, const std::vector<torch::Tensor>& grads) const;

  // Every --checkpoint-every steps, and at the run's last step (the target's too).
  bool checkpoint_due(int step) const;

  // Totals, and the validation loss when one is due (not part of the step's
  // time; --async: async_step evaluated the weights its window kept).
  void account(StepRecord& rec);
  bool eval_due(int step) const;
  // The validation loss of the model's weights as they are now (under
  // mpirun every stage's owner shares them first; every rank gets it;
  // tensor-parallel shards are gathered into the full model).
  double validation_loss();

  // Under mpirun a window's records hold this rank's stages' drift and
  // peaks (zero elsewhere) and, on the last stage's rank, the losses.
  void merge_rank_records(std::vector<StepRecord>& recs);

  // --async: the steps up to the window's end (--window steps at most,
  // and never past a checkpoint) as one graph; their records are returned
  // one at a time. Evaluation does not drain: the steps due keep each
  // stage's weights as its update leaves them, evaluated after the window.
  StepRecord async_step();
  // The validation loss of each step due in `recs`, from the weights its
  // window kept (AsyncWindows::take_kept_weights); true when it evaluated
  // weights other than the current ones.
  bool evaluate_kept(const std::vector<std::vector<std::vector<torch::Tensor>>>& kept, std::vector<StepRecord>& recs);

  StepRecord step();

  TrainResult finish();

};

}  // namespace rrfp::train
