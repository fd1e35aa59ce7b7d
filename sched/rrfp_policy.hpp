// StarPU adapters around the arbitration core: the `rrfp` (readiness-first)
// and `rrfp-fixed` (strict order) scheduling policies.
//
// The policy is a process-wide singleton, like StarPU itself. An executor
// attaches its run (arbiter + worker map) before submitting and detaches
// after the last task; graph tasks are recognised by their codelet and carry
// a GraphTaskArg as cl_arg. Tasks that are not part of a run go to a plain
// FIFO so the policy never loses work.
//
// Tensor parallelism (PolicyRun::tp = T > 1): every graph task runs as T
// member tasks, member t of device d on worker slot d*T+t. Member 0 (the
// leader) is arbitrated as usual; at each take() its decision is appended to
// the follow queue of every other member of the group, and a follower runs
// only the head of its queue. So all members start their tasks, and enter
// the collectives inside them, in the leader's order. A follower on another
// MPI rank gets the decisions by message (policy_follow).
#pragma once

#include <string>
#include <vector>

#include <starpu.h>

#include "sched/arbiter.hpp"

namespace rrfp {

struct GraphTaskArg {
  int id = -1;            // graph task id
  void* owner = nullptr;  // the executor's run
  int member = 0;         // tensor-parallel member (0 = leader)
};

// worker_of_slot entry of a slot whose worker lives in another process.
inline constexpr int kRemoteWorker = STARPU_NMAXWORKERS - 1;

struct PolicyRun {
  Arbiter* arbiter = nullptr;
  // Per slot d*tp+t: the StarPU worker of member t of device d (kRemoteWorker
  // when another rank runs it).
  std::vector<int> worker_of_slot;
  std::vector<const starpu_codelet*> codelets;  // graph tasks use these
  int tasks = 0;
  int tp = 1;  // tensor-parallel members per device
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
// A decision of a leader on another rank: member `member` of `device` runs
// graph task `task` after the ones it was given before.
void policy_follow(int device, int member, int task);
// Stop arbitrating: hand any ready task to its device at once, so an
// aborted run drains instead of hanging.
void policy_drain();

}  // namespace rrfp
