#include "runtime/link_thread.hpp"

namespace rrfp {

LinkThread::LinkThread(void (*release)(starpu_task*)) : release_(release), th_([this] { loop(); }) {}

LinkThread::~LinkThread() {
  {
    std::lock_guard<std::mutex> g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  th_.join();
}

void LinkThread::schedule(starpu_task* t, double delay_s) {
  {
    std::lock_guard<std::mutex> g(m_);
    auto when = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay_s));
    due_.emplace(flush_ ? Clock::now() : when, t);
  }
  cv_.notify_all();
}

void LinkThread::flush() {
  {
    std::lock_guard<std::mutex> g(m_);
    flush_ = true;
  }
  cv_.notify_all();
}

int LinkThread::busy() {
  std::lock_guard<std::mutex> g(m_);
  return static_cast<int>(due_.size()) + releasing_;
}

void LinkThread::loop() {
  std::unique_lock<std::mutex> lk(m_);
  for (;;) {
    if (stop_ && due_.empty()) return;
    if (due_.empty()) {
      cv_.wait(lk);
      continue;
    }
    auto first = due_.begin();
    if (!flush_ && first->first > Clock::now()) {
      cv_.wait_until(lk, first->first);
      continue;
    }
    starpu_task* t = first->second;
    due_.erase(first);
    ++releasing_;
    lk.unlock();
    // Completes the transfer: StarPU pushes its consumers from this thread.
    if (release_) release_(t);
    else starpu_task_end_dep_release(t);
    lk.lock();
    --releasing_;
  }
}

}  // namespace rrfp
