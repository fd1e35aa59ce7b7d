#include "runtime/starpu_tasks.hpp"

#include "runtime/executor.hpp"  // worker_cuda_stream, worker_cuda_device

#include <fmt/format.h>

namespace rrfp {

WorkerPlacement::WorkerPlacement(int worker, bool static_order)
    : worker_(worker), static_order_(static_order), mask_(worker / 32 + 1, 0) {
  mask_[worker / 32] |= 1u << (worker % 32);
}

void WorkerPlacement::place(starpu_task* t, unsigned order) const {
  if (static_order_) {
    t->execute_on_a_specific_worker = 1;
    t->workerid = static_cast<unsigned>(worker_);
    t->workerorder = order;
  } else {
    t->workerids = const_cast<std::uint32_t*>(mask_.data());
    t->workerids_len = static_cast<unsigned>(mask_.size());
  }
}

void* worker_cuda_stream() {
#ifdef STARPU_USE_CUDA
  const int w = starpu_worker_get_id();
  if (w >= 0 && starpu_worker_get_type(w) == STARPU_CUDA_WORKER) return starpu_cuda_get_local_stream();
#endif
  return nullptr;
}

int worker_cuda_device() {
  const int w = starpu_worker_get_id();
  return w >= 0 && starpu_worker_get_type(w) == STARPU_CUDA_WORKER ? starpu_worker_get_devid(w) : -1;
}

void unregister_all(const std::vector<starpu_data_handle_t>& handles) {
  for (auto h : handles)
    if (h) starpu_data_unregister(h);
}

std::string run_guarded(const std::function<void()>& work, const std::string& what) {
  try {
    work();
    return "";
  } catch (const std::exception& e) {
    return fmt::format("{} failed: {}", what, e.what());
  } catch (...) {
    return fmt::format("{} failed with a non-standard exception", what);
  }
}

std::string member_task_name(const std::string& label, int member, int tp) {
  return tp > 1 ? fmt::format("{} (TP member {})", label, member) : label;
}

std::string epilogue_name(int index, int stages, int tp) {
  if (index >= stages * tp)  // grouped (asynchronous training; tp == 1)
    return fmt::format("update {} of stage {}", index / stages, index % stages);
  return tp > 1 ? fmt::format("epilogue of stage {} (TP member {})", index % stages, index / stages)
                : fmt::format("epilogue of stage {}", index);
}

}  // namespace rrfp
