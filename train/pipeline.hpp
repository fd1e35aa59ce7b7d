// The per-stage pass functions of pipeline training. One Pipeline holds the
// autograd state of every (model stage, microbatch) of one iteration; a task
// body calls run(kind, stage, mb) and the executor (StarPU, or a replay of a
// hint in tests) supplies the order. Tasks of different (stage, mb) touch
// disjoint state; W/BW tasks of one stage share the stage's gradient
// accumulator (guarded, and StarPU's STARPU_RW|STARPU_COMMUTE access
// serialises them in any order).
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "graph/task_graph.hpp"
#include "train/linear_tape.hpp"
#include "train/memory.hpp"
#include "train/model.hpp"

namespace rrfp::train {

// Each worker is one device: no intra-op threads under the calling thread,
// torch's or the BLAS's (once per thread; OpenMP's thread count is per thread).
void one_intra_op_thread();
// A new worker's first pass would also pay for its thread-local set-up
// (the thread counts above, the BLAS's buffers, the allocator's caches):
// the executor runs this once per worker when StarPU starts instead.
void warm_worker();

// Splits M*b windows of T+1 bytes (Sampler::next) into M microbatches.
std::vector<Microbatch> make_microbatches(const std::vector<std::uint8_t>& windows, int microbatches,
                                          int micro_batch_size, int seq_len);

class Pipeline {
 public:
  // deterministic: add each stage's microbatch gradients in microbatch
  // order whatever order the W tasks ran in, so the result is bitwise the
  // plain loop's: a gradient that arrives before an earlier microbatch's
  // waits in a reorder buffer (none waits when W runs in microbatch order,
  // as in GPipe, 1F1B and ZB-H1; at most M - 1 copies otherwise, M
  // counting every copy's microbatches: data-parallel replicas after the
  // first wait for the first's, up to (D - 1) x M / D copies).
  // `counts`: blocks per model stage (Model::partition); empty = the even split.
  Pipeline(const Model& model, int model_stages, int microbatches, bool deterministic,
           const std::vector<int>& counts = {});
  ~Pipeline();

  int stages() const { return static_cast<int>(stages_.size()); }
  int microbatches() const { return M_; }
  const StageModule& stage(int s) const { return stages_[s]; }

  // Starts an iteration: clears state, gradients and peaks.
  void begin_step(std::vector<Microbatch> mbs);
  // The task body: one pass of one microbatch on one model stage. With
  // message buffers (StarPU data handles, runtime/executor.hpp) F reads its
  // input activation from `in` and writes its output to `out`, a backward
  // reads its output gradient from `in` and writes its input gradient to
  // `out`, each a float tensor of message_shape(): viewed, not copied, on
  // the way in; copied into the handle on the way out. Without (null) the
  // passes hand tensors over inside this object (replay, tests).
  void run(Kind k, int stage, int mb, const void* in = nullptr, void* out = nullptr);
  void forward(int s, int m, const void* in = nullptr, void* out = nullptr);  // F: keeps the autograd graph
  void backward_input(int s, int m, const void* in = nullptr, void* out = nullptr);  // B: grad of the stage input (and dz, kept for W)
  void backward_weight(int s, int m);  // W: grad of the parameters, no autograd
  void backward_full(int s, int m, const void* in = nullptr, void* out = nullptr);  // BW: B then W
  // Where the stages compute (rrfp train --cuda: the GPU the model was moved
  // to): begin_step moves the microbatches there, and message buffers are
  // device memory there (StarPU's handles on that GPU's memory node).
  void set_device(const torch::Device& d) { device_ = d; }
  const torch::Device& device() const { return device_; }
  // Every message between stages: [b, positions, d_model] floats.
  void set_message_shape(std::vector<std::int64_t> shape) { msg_shape_ = std::move(shape); }
  const std::vector<std::int64_t>& message_shape() const { return msg_shape_; }

  // After every task of the iteration ran: the stage's parameter gradients
  // (mean over microbatches), in the order of stage(s).params().
  std::vector<torch::Tensor> stage_grads(int s) const;
  // Mirror reduction across ranks (train/mirror_reduce.hpp). The ranks
  // before this one summed the stage's gradients of microbatches
  // 0..first_mb-1 into `partial`. Deterministic: it replaces this rank's
  // sum, and this rank's microbatches from first_mb on (kept aside until
  // their turn) are added to it in order; otherwise this rank's own sum is
  // added to it. set_stage_sum installs the finished sum for stage_grads.
  void add_partial_sum(int s, int first_mb, std::vector<torch::Tensor> partial);
  void set_stage_sum(int s, std::vector<torch::Tensor> sum);
  std::vector<torch::Tensor> running_sum(int s) const { return acc_[s]; }  // what this rank summed so far
  // Asynchronous training (docs/async.md): the microbatches form groups of
  // g (one optimizer update each); the last stage scales the loss by 1/g,
  // stage_grads(s) is the mean over the stage's current group, and
  // next_group(s) starts its next one (after the update read the sums).
  void set_update_group(int g);
  void next_group(int s);
  // AMDP across ranks: per microbatch, 1 where this rank runs stage s's
  // passes (empty: all). Deterministic sums skip the others, so this
  // rank's share of a group is added in microbatch order.
  void set_local_microbatches(int s, std::vector<unsigned char> local);
  int accumulated(int s) const { return acc_count_[s]; }  // microbatches of the current group added (or skipped)
  double group_loss(int k) const;  // mean over group k's microbatches
  // Mean of the microbatch losses, summed in microbatch order.
  double loss() const;
  std::vector<float> microbatch_losses() const { return losses_; }
  void set_microbatch_losses(std::vector<float> l) { losses_ = std::move(l); }  // merged from several ranks
  // Per stage: the largest activation footprint seen at the end of a
  // forward this iteration (see memory.hpp for what is counted).
  std::vector<std::int64_t> peak_activation_bytes() const;
  // Stages sharing a device (interleaved, V-shape) and stages with a copy
  // per direction (Chimera): with the hint's placement set (placement[p][s]
  // the device of stage s in pipeline p, mb_pipeline[m] the pipeline of
  // microbatch m, empty: all in 0), each copy of a stage has its own
  // counter, the sum over a device's copies is read at the end of each of
  // their forwards, and its peak reported per device. Before the first step.
  void set_placement(std::vector<std::vector<int>> placement, std::vector<int> mb_pipeline);
  std::vector<std::int64_t> peak_activation_per_device() const;
  // Bytes of gradient buffers held per stage at the end of the iteration.
  std::int64_t grad_buffer_bytes() const;

  // Multi-rank runs (docs/mpi.md): what a pass hands to a pass on another
  // rank, read there after F(s, m) / B or BW(s, m), and installed on the
  // receiving rank where the next pass looks for it.
  const torch::Tensor& output_of(int s, int m) const { return slots_[static_cast<size_t>(s) * M_ + m].output; }
  const torch::Tensor& input_grad_of(int s, int m) const { return slots_[static_cast<size_t>(s) * M_ + m].grad_in; }
  void set_output(int s, int m, torch::Tensor y) { slot(s, m).output = std::move(y); }
  void set_input_grad(int s, int m, torch::Tensor g) { slot(s, m).grad_in = std::move(g); }

 private:
  struct Slot {
    torch::Tensor input, output, grad_out, grad_in;
    // Split backward (linear_tape.hpp): F records the linear layers; B
    // leaves their output gradients dz and the other parameters' gradients
    // for W.
    std::vector<TapeEntry> tape;
    std::vector<torch::Tensor> dz;
    std::vector<int> other;  // parameter indices no recorded linear owns
    std::vector<torch::Tensor> other_grads;
    bool b_done = false;
  };
  Slot& slot(int s, int m) { return slots_[static_cast<size_t>(s) * M_ + m]; }
  // Index of a parameter tensor in stage(s).params(); throws if it is not one.
  int index_of(int s, const torch::Tensor& param) const;
  void accumulate(int s, int m, std::vector<torch::Tensor> grads);
  void add_early(int s);  // deterministic: the microbatches kept aside whose turn has come
  void take_grad_out(int s, int m, const void* in);
  torch::Tensor view_message(const void* buf) const;
  void write_message(void* buf, const torch::Tensor& t, const char* what, int s, int m) const;
  void check_order(bool ok, const char* what, int s, int m) const;

  const Model* model_;
  torch::Device device_ = torch::kCPU;
  std::vector<std::int64_t> msg_shape_;
  int M_;
  bool det_;
  std::vector<StageModule> stages_;
  std::vector<std::unordered_map<const void*, int>> param_index_;  // per stage: tensor -> index
  std::vector<Microbatch> mbs_;
  std::vector<Slot> slots_;
  std::vector<float> losses_;
  // One running sum per stage. The buffers outlive the step, so a step
  // neither frees nor allocates them (docs/training.md, "Gradient buffers").
  std::vector<std::vector<torch::Tensor>> acc_;
  std::vector<int> acc_count_;  // per stage: microbatches added this step (or group)
  std::vector<int> acc_base_;   // per stage: first microbatch of its current group
  std::vector<unsigned char> acc_live_;  // per stage: the sums hold this group's gradients
  std::vector<std::vector<unsigned char>> local_mb_;  // set_local_microbatches
  void skip_foreign(int s);     // deterministic: counts the other ranks' microbatches whose turn came
  int group_ = 0;               // set_update_group; 0 = one group of M
  // Deterministic mode: gradients that arrived ahead of their turn, per
  // (stage, microbatch); empty when W runs in microbatch order.
  std::vector<std::vector<torch::Tensor>> early_;
  void add_to_sum(int s, std::vector<torch::Tensor>& grads);  // under acc_mu_[s]
  int shared_sum_gpu(int s, const std::vector<torch::Tensor>& grads) const;
  std::vector<torch::Tensor> backward_to(int s, const Slot& sl, torch::autograd::edge_list wrt);
  std::unique_ptr<std::mutex[]> acc_mu_;
  std::vector<std::shared_ptr<MemCounter>> mem_;
  std::unique_ptr<std::atomic<std::int64_t>[]> peak_;
  // Activation counters: one per stage copy, mem_[s * pipes_ + p].
  int pipes_ = 1;
  std::vector<std::vector<int>> placement_;  // empty: per-device peaks not measured
  std::vector<int> mb_pipeline_;
  int pipe_of(int m) const { return mb_pipeline_.empty() ? 0 : mb_pipeline_[m]; }
  std::unique_ptr<std::atomic<std::int64_t>[]> device_peak_;
  int devices_ = 0;
};

}  // namespace rrfp::train
