#include "train/mirror_overlap.hpp"

#include <stdexcept>

#include "train/mirror_reduce.hpp"

namespace rrfp::train {

MirrorOverlap::MirrorOverlap(std::vector<Pipeline*> pipes, const MpiTrainPlan& plan, int rank, Update update)
    : pipes_(std::move(pipes)), plan_(plan), rank_(rank), update_(std::move(update)),
      left_(plan.local_microbatches.size()), ready_(plan.local_microbatches.size(), 0) {
  for (size_t i = 0; i < left_.size(); ++i) {
    left_[i] = plan.local_microbatches[i];
    ready_[i] = left_[i] == 0;
  }
  thread_ = std::thread([this] { run(); });
}

MirrorOverlap::~MirrorOverlap() {
  {
    std::lock_guard<std::mutex> g(m_);  // or the thread could miss it between its check and its wait
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MirrorOverlap::pass_done(int i, const std::function<void()>& settle) {
  if (--left_[i] != 0) return;
  settle();
  {
    std::lock_guard<std::mutex> g(m_);
    ready_[i] = 1;
  }
  cv_.notify_all();
}

void MirrorOverlap::finish() {
  // Every pass has run: each count is 0 now, or the counts were wrong.
  bool counted = true;
  {
    std::lock_guard<std::mutex> g(m_);
    graph_done_ = true;
    for (size_t i = 0; i < ready_.size(); ++i) {
      counted = counted && left_[i] == 0;
      ready_[i] = 1;
    }
    if (!counted) stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (!counted) throw std::logic_error("mirror reduction: this rank's backward passes were miscounted");
  if (error_) std::rethrow_exception(error_);
}

void MirrorOverlap::run() {
  try {
    one_intra_op_thread();
    for (int i : mirror_order(plan_)) {
      if (plan_.mirror[i].empty() || !plan_.local[i]) continue;
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return ready_[i] || stop_.load(); });
      }
      if (stop_ || !mirror_reduce_pair(pipes_, plan_, rank_, i, stop_, graph_done_)) return;
      if (update_) update_(i / plan_.members, i % plan_.members);
    }
  } catch (...) {
    error_ = std::current_exception();
  }
}

}  // namespace rrfp::train
