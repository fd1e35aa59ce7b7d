// StarPU adapters around the arbitration core: the `rrfp` (readiness-first)
// and `rrfp-fixed` (strict order) scheduling policies.
//
// The policy is a process-wide singleton, like StarPU itself. An executor
// attaches its run (arbiter + worker map) before submitting and detaches
// after the last task; graph tasks are recognised by their codelet and carry
// a GraphTaskArg as cl_arg. Tasks that are not part of a run go to a plain
// FIFO so the policy never loses work.
#pragma once

#include <string>
#include <vector>

#include <starpu.h>

#include "sched/arbiter.hpp"

namespace rrfp {

struct GraphTaskArg {
  int id = -1;            // graph task id
  void* owner = nullptr;  // the executor's run
};

struct PolicyRun {
  Arbiter* arbiter = nullptr;
  std::vector<int> worker_of_device;
  std::vector<const starpu_codelet*> codelets;  // graph tasks use these
  int tasks = 0;
};

starpu_sched_policy* rrfp_policy();        // "rrfp"
starpu_sched_policy* rrfp_fixed_policy();  // "rrfp-fixed"

void policy_attach(const PolicyRun& run);
void policy_detach();
// Arbitration events so far (ready, take, finish); a stall watchdog sees
// whether anything moved.
long policy_events();
// True, with Arbiter::describe() in *why, when the attached arbiter says no
// device can take a task and nothing runs.
bool policy_stalled(std::string* why);
// Stop arbitrating: hand any ready task to its device at once, so an
// aborted run drains instead of hanging.
void policy_drain();

}  // namespace rrfp
