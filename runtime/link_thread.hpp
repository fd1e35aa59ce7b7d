// Link delays for cross-device transfers. A transfer is a StarPU task with no
// codelet that holds one end dependency; when its producer is done, StarPU
// "starts" it (prologue_callback_pop_func) and we ask this thread to release
// that end dependency after the link delay. Its consumers then become ready.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <starpu.h>

namespace rrfp {

class LinkThread {
 public:
  // `release` ends a held task when its delay is over; by default
  // starpu_task_end_dep_release from this thread. The submitter releases
  // through a tiny task instead, so the held task terminates on a worker
  // (policies such as dmda need a worker there).
  explicit LinkThread(void (*release)(starpu_task*) = nullptr);
  ~LinkThread();
  LinkThread(const LinkThread&) = delete;
  LinkThread& operator=(const LinkThread&) = delete;

  // Releases one end dependency of `t` after `delay_s`.
  void schedule(starpu_task* t, double delay_s);
  // Releases everything now and from now on (an aborted run drains).
  void flush();
  // Transfers waiting or being released right now.
  int busy();

 private:
  void loop();
  using Clock = std::chrono::steady_clock;
  std::mutex m_;
  std::condition_variable cv_;
  std::multimap<Clock::time_point, starpu_task*> due_;
  int releasing_ = 0;
  bool stop_ = false, flush_ = false;
  void (*release_)(starpu_task*);
  std::thread th_;
};

}  // namespace rrfp
