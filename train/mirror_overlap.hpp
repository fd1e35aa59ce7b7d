// The mirror reduction beside the step's graph (docs/mpi.md, "Bidirectional
// hints: the mirror reduction"): a thread of its own walks the pairs in
// mirror_order and reduces each once this rank's last W/BW pass of it has
// run, then applies the pair's update if given, while the workers go on
// with the rest of the graph. Its messages are mirror_reduce's, in
// the same order, so the sums are bitwise the same and the same argument
// rules out a deadlock; waiting for a pair's passes adds none, since the
// graph never waits for the reduction.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "train/mpi_train.hpp"
#include "train/pipeline.hpp"

namespace rrfp::train {

class MirrorOverlap {
 public:
  using Update = std::function<void(int stage, int member)>;
  // `update` (optional): runs on the thread after each reduced pair this
  // rank holds. Each pair waits for plan.local_microbatches of its passes.
  MirrorOverlap(std::vector<Pipeline*> pipes, const MpiTrainPlan& plan, int rank, Update update);
  ~MirrorOverlap();  // a failed graph: stops the thread and joins it
  MirrorOverlap(const MirrorOverlap&) = delete;
  MirrorOverlap& operator=(const MirrorOverlap&) = delete;

  // A worker, after one of this rank's W/BW passes of pair i: the last
  // one calls `settle` (a CUDA worker waits for its stream there), then
  // hands the pair to the thread.
  void pass_done(int i, const std::function<void()>& settle);
  // After the graph: waits for the thread; rethrows what it threw.
  void finish();

 private:
  void run();

  std::vector<Pipeline*> pipes_;
  const MpiTrainPlan& plan_;
  int rank_;
  Update update_;
  std::vector<std::atomic<int>> left_;  // per pair: passes still to run here
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<unsigned char> ready_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> graph_done_{false};  // finish() was called: wait without sleeping
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace rrfp::train
