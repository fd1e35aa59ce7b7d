// Megatron-style tensor parallelism (gpt-tiny here; mm-tiny's members are
// MmModel shards, train/mm_model.hpp, built by tp_member): member t of T holds a
// shard of every block (attention heads [tH/T, (t+1)H/T), MLP columns
// [Wt/T, W(t+1)/T) of the block's width W, 4d unless --mlp-widths; a block
// without an MLP has none) and copies of everything else (norms,
// embeddings, head, the biases added after a reduction).
//
//   h  = LN(x);  h' = f(h)          f: identity forward, all-reduce backward
//   y  = attention over local heads of h'; z = g(y W_proj,t) + b_proj
//   g: all-reduce forward, identity backward
// and likewise for the MLP (fc1 column-parallel, fc2 row-parallel). So F
// has two all-reduces per block and B two; W has none (it computes weight
// gradients from the linear tape, train/linear_tape.hpp). The collectives go through a TpComm (runtime/tp_comm.hpp);
// the task body names the task first (TpTaskScope), each all-reduce gets
// that task's next collective id.
//
// Replicated parameters get the same gradient on every member (bitwise:
// the all-reduces sum in member order), so the members' AdamW steps keep
// them equal without a further reduction.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/tp_comm.hpp"
#include "train/model.hpp"

namespace rrfp::train {

// A transformer block of member t: its local heads (heads_local of width
// dh) and MLP columns, the two all-reduces each way (f and g above);
// `masked` as transformer_block's.
torch::Tensor tp_block(const BlockParams& b, const torch::Tensor& x, int64_t heads_local, int64_t dh,
                       const torch::Tensor& masked);

// How a full parameter is split over the members.
struct ShardSpec {
  int dim = -1;       // -1: replicated
  bool qkv = false;   // rows are [q; k; v]: split each third along `dim`
};
ShardSpec shard_spec(const std::string& param_name);
torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& s, int member, int members);
torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& s);

// Member `member` of a T-way split of `full` (copies; later changes to
// `full` are not seen). Parameter names and order are the full model's.
class GptTpShard : public Model {
 public:
  GptTpShard(const GptModel& full, int members, int member);
  const std::vector<NamedParam>& all_params() const override { return params_; }
  std::vector<StageRange> partition(int stages) const override { return partition_blocks(cfg_.layers, stages); }
  using Model::partition;
  int blocks() const override { return cfg_.layers; }
  std::vector<NamedParam> stage_params(const StageRange& r, bool first, bool last) const override;
  torch::Tensor stage_forward(const StageRange& r, bool first, bool last, const torch::Tensor& input,
                              const Microbatch& mb) const override;

 protected:
  void buffers_to(const torch::Device& device) override { causal_mask_ = causal_mask_.to(device); }

 private:
  GptConfig cfg_;
  int T_, member_;
  torch::Tensor tok_emb_, pos_emb_;
  HeadParams head_;
  std::vector<BlockParams> blocks_;
  torch::Tensor causal_mask_;
  std::vector<NamedParam> params_;
  std::vector<std::size_t> block_param_begin_;
};

// Member `member` of a T-way split of a whole model: a GptTpShard of
// gpt-tiny/gpt-small, an MmModel shard of mm-tiny (train/mm_model.hpp).
std::unique_ptr<Model> tp_member(const Model& full, int members, int member);
// Every stage's pass runs 2 all-reduces a block: refuses a stage of more
// blocks than kMaxCollectivesPerTask / 2 (runtime/tp_comm.hpp) by name.
void check_tp_stages(const Model& model, const std::vector<StageRange>& stages);

// Set by a task body around one pass of one member: the all-reduces inside
// it go to `comm`'s group, named after `task`. Thread-local (LibTorch runs
// a CPU backward on the calling thread). A CUDA backward runs on LibTorch's
// autograd thread of the GPU instead, where no scope is set: there the
// all-reduce takes the pass in flight in the process, which is the only
// one, since with --cuda a process runs one member (train/trainer_io.cpp).
class TpTaskScope {
 public:
  TpTaskScope(TpComm* comm, int group, int member, int task);
  ~TpTaskScope();
  TpTaskScope(const TpTaskScope&) = delete;
  TpTaskScope& operator=(const TpTaskScope&) = delete;

  struct Context {
    TpComm* comm;
    int group, member, task, next;
  };

 private:
  Context ctx_;  // what tp_allreduce() reads through a thread-local pointer
};

// Sums `t` (contiguous float) over the current task's group, in place.
void tp_allreduce(torch::Tensor& t);

}  // namespace rrfp::train
