#include "runtime/run_state.hpp"

#include "runtime/link_thread.hpp"
#include "runtime/starpu_tasks.hpp"

namespace rrfp {

void RunState::size_records(int epilogues) {
  start.assign(n * tp, -1);
  end.assign(n * tp, -1);
  worker.assign(n * tp, -1);
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

void transfer_started(void* arg) {
  auto* t = static_cast<TransferArg*>(arg);
  t->run->link->schedule(t->task, t->delay_s);
}

// Runs after every W/BW of its stage (plain RW on the stage's gradient handle).
void epilogue_body(void** /*buffers*/, void* cl_arg) {
  auto* a = static_cast<EpilogueArg*>(cl_arg);
  RunState* r = a->run;
  const int i = a->index;
  r->epi_worker[i] = starpu_worker_get_id();
  r->running.fetch_add(1);
  r->epi_start[i] = r->now();
  if (!r->abort.load()) {  // an aborted run (a failed pass) skips the step too
    std::string err = run_guarded([&] { (*r->epilogue)(i); }, epilogue_name(i, r->g->spec().stages, r->tp));
    if (!err.empty()) r->fail(std::move(err));
  }
  r->epi_end[i] = r->now();
  r->running.fetch_sub(1);
  r->finished_one();
}

}  // namespace rrfp
