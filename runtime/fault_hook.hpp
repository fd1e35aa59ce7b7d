// Fault injection for tests, as an ExecOptions::task_hook: the task whose
// label is `task` ("1F5", PyTorch's cell, or "1BW5" by kind name) throws,
// kills its process with SIGKILL (a rank that dies without a goodbye) or
// hangs. Drivers build it from RRFP_MPI_FAIL_TASK, RRFP_MPI_KILL_TASK and
// RRFP_MPI_HANG_TASK (docs/mpi.md; rrfp train's RRFP_FAIL_TASK is
// train/trainer_io.hpp's Fault); production runs have no hook at all.
#pragma once

#include <functional>
#include <string>

#include "graph/task_graph.hpp"

namespace rrfp {

enum class FaultAction { Throw, Kill, Hang };

// True when graph task `id` is the one `label` names.
bool task_matches(const TaskGraph& g, int id, const std::string& label);
// The hook (called with member * tasks + id); empty when `task` is "".
std::function<void(int call)> make_fault_hook(const TaskGraph& g, const std::string& task, FaultAction action,
                                              const std::string& why);

}  // namespace rrfp
