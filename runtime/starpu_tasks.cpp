#include "runtime/starpu_tasks.hpp"

#include <fmt/format.h>

namespace rrfp {

starpu_codelet graph_codelet(void (*body)(void**, void*), bool grad, bool commute, const char* name) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.where = STARPU_CPU;
  cl.cpu_funcs[0] = body;
  cl.nbuffers = grad ? 1 : 0;
  if (grad) cl.modes[0] = commute ? static_cast<starpu_data_access_mode>(STARPU_RW | STARPU_COMMUTE) : STARPU_RW;
  cl.name = name;
  return cl;
}

starpu_codelet epilogue_codelet(void (*body)(void**, void*), const char* name) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.where = STARPU_CPU;
  cl.cpu_funcs[0] = body;
  cl.nbuffers = 1;
  cl.modes[0] = STARPU_RW;
  cl.name = name;
  return cl;
}

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

std::vector<starpu_data_handle_t> register_variables(std::vector<double>& values) {
  std::vector<starpu_data_handle_t> h(values.size(), nullptr);
  for (size_t i = 0; i < values.size(); ++i)
    starpu_variable_data_register(&h[i], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&values[i]), sizeof(double));
  return h;
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
  return tp > 1 ? fmt::format("epilogue of stage {} (TP member {})", index % stages, index / stages)
                : fmt::format("epilogue of stage {}", index);
}

}  // namespace rrfp
