// AMDP across ranks (docs/async.md, "AMDP under mpirun"). A stage's copies
// (one per direction) may live on several ranks, and its one update per
// group runs on its home (the device of its first direction's copy). The
// window's graph carries what the update needs as StarPU data, so
// StarPU-MPI moves it while the pipeline keeps running:
// - every rank holding copies of stage s away from its home adds their
//   gradients into one accumulator, C(s, first such device); its rank's
//   last W/BW of the group packs the rank's sum into it, and the home's
//   epilogue, which reads it, adds it to the home's own before the update;
// - the epilogue packs the updated weights into the version handle
//   V(s, k mod 2) it already writes, and the next-but-one group's forwards
//   on other ranks, which already read it (the gate), install them.
// After each window the trainer has the homes broadcast their stages'
// weights (Trainer::Impl::share_stage_state), so every rank starts the next
// window, evaluation and checkpoints from them.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "hints/hint.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

class AmdpRanks {
 public:
  // `hint`: the window's AMDP hint (its microbatches form groups of
  // `group`); devices d*K..d*K+K-1 live on rank d / K.
  AmdpRanks(const Hint& hint, int group, int rank, int devices_per_rank);

  int home_rank(int s) const;
  bool home_here(int s) const { return home_rank(s) == rank_; }
  // ExecOptions::accumulator_device: the home's rank adds into the home's
  // accumulator, every other rank into that of its first copy of s.
  int accumulator_device(int s, int d) const;
  // Per microbatch: 1 where this rank runs stage s (Pipeline::set_local_microbatches).
  std::vector<unsigned char> local_microbatches(int s) const;
  // Bytes after the 8-byte header of stage s's accumulators and versions.
  static std::size_t state_bytes(const Pipeline& pipe, int s);

  // Starts a window: no backward counted, no version installed.
  void begin_window();
  // After a W/BW of stage s, microbatch m, on this rank: true when it was
  // this rank's last of its group (then pack_sum, away from the home).
  bool count_backward(int s, int m);
  int local_count(int s, int group) const { return expected_[s][group]; }

  // [count][the sums, flat floats]; add_remote_sums adds every other
  // rank's into `sums` (the home's), checking their counts.
  static void pack_sum(const std::vector<torch::Tensor>& sums, std::int64_t count, void* buf);
  void add_remote_sums(int s, int group, std::vector<torch::Tensor>& sums) const;
  // [version][the weights, flat floats]; install copies them into the
  // stage's parameters when newer than what this rank has (true then).
  static void pack_weights(const Pipeline& pipe, int s, std::int64_t version, void* buf);
  bool install(Pipeline& pipe, int s, const void* buf);
  // A packed buffer's version, and its weights viewed (not copied) in the
  // shapes of stage s's parameters. Every buffer is on the running task's
  // data node (host memory, or a CUDA worker's GPU: with --cuda the one of
  // the rank's model), read and written by torch on the current stream.
  static std::int64_t packed_version(const void* buf);
  static std::vector<torch::Tensor> packed_weights(const Pipeline& pipe, int s, const void* buf);
  int installed(int s) const { return installed_[s]; }

 private:
  const Hint& hint_;
  const int group_, rank_, K_, S_;
  std::vector<std::vector<int>> expected_;  // [s][group]: this rank's microbatches of s
  std::vector<std::vector<int>> counted_;   // [s][group] (each updated under the accumulator)
  std::vector<int> installed_;              // [s]: the version this rank's weights hold
};

}  // namespace rrfp::train
