#include "runtime/run_state.hpp"

namespace rrfp {

void RunState::size_records(int epilogues) {
  start.assign(n * tp, -1);
  end.assign(n * tp, -1);
  worker.assign(n * tp, -1);
  pos.assign(n * tp, -1);
  epi_start.assign(epilogues, -1);
  epi_end.assign(epilogues, -1);
  epi_worker.assign(epilogues, -1);
  by_worker.resize(starpu_worker_get_count());
}

void RunState::fail(std::string msg) {
  {
    std::lock_guard<std::mutex> g(m);
    if (error.empty()) error = std::move(msg);
  }
  cv.notify_all();
}

void RunState::finished_one() {
  if (done.fetch_add(1) + 1 < total) return;
  { std::lock_guard<std::mutex> g(m); }  // the watchdog is in wait_for or has not checked done yet
  cv.notify_all();
}

}  // namespace rrfp
