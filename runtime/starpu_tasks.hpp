// Small things the submitter does to StarPU tasks: a task's placement on
// its worker, guarded bodies, and the names used in error messages.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <starpu.h>

namespace rrfp {

// Restricts a task to one worker: `workerids` (rrfp*, built-ins), or, under
// static-order, execute_on_a_specific_worker with `order` as its workerorder
// (0: no place in the order, e.g. epilogues).
class WorkerPlacement {
 public:
  WorkerPlacement(int worker, bool static_order);
  void place(starpu_task* t, unsigned order = 0) const;

 private:
  int worker_;
  bool static_order_;
  std::vector<std::uint32_t> mask_;
};

// Unregisters every non-null handle.
void unregister_all(const std::vector<starpu_data_handle_t>& handles);

// Runs a task's work; "" when it returned, else "<what> failed: <reason>"
// (a throw never escapes into StarPU's worker).
std::string run_guarded(const std::function<void()>& work, const std::string& what);

// "1F3" or "1F3 (TP member 1)"; "epilogue of stage 2 (TP member 1)" for
// epilogue index member * stages + stage.
std::string member_task_name(const std::string& label, int member, int tp);
std::string epilogue_name(int index, int stages, int tp);

}  // namespace rrfp
