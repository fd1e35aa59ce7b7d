// The one submission path: registers a run's data handles, submits every
// task with its data accesses, waits for the run with one watchdog, and
// records what ran where. One process and many ranks differ only in the
// layout: which rank owns each slot (device * T + member), and so where
// each task runs and who owns each handle; the rank transport (StarPU-MPI,
// mpi/mpi_executor.cpp) then posts the sends and receives itself.
#pragma once

#include <memory>
#include <vector>

#include "hints/hint.hpp"
#include "runtime/executor.hpp"
#include "runtime/rank_transport.hpp"
#include "runtime/run_state.hpp"
#include "runtime/run_plan.hpp"

namespace rrfp {

struct RankLayout {
  int rank = 0, ranks = 1;
  int slots_per_rank = 1;  // one process: every slot
  RankTransport* transport = nullptr;  // several ranks: handles registered with owners, tasks built per rank
  bool distributed() const { return transport != nullptr; }
  int rank_of_slot(int slot) const { return transport ? slot / slots_per_rank : 0; }
};

struct GraphRunSpec {
  GraphRunSpec(const Hint& h, const TaskBody& b, const ExecOptions& o, const RunPlan& plan, RankLayout l)
      : hint(&h), body(&b), opt(&o), choice(&plan.choice), arb(plan.arb.get()), layout(l),
        timeout_s(o.stall_timeout_s) {}
  const Hint* hint;
  const TaskBody* body;
  const ExecOptions* opt;
  const PolicyChoice* choice;
  Arbiter* arb;  // rrfp and rrfp-fixed
  RankLayout layout;
  std::vector<int> worker_of_slot;  // per slot: its StarPU worker here, RRFP_REMOTE_WORKER elsewhere
  double timeout_s;                 // no progress for this long: the run failed
  // Ordered channels' send and receive tasks run on these workers (their
  // wire's GPU), any worker here when empty.
  std::vector<int> channel_workers;
};

struct GraphRunOutcome {
  std::unique_ptr<RunState> run;
  int transfers = 0;       // messages between devices (link tasks or not)
  int data_handles = 0;    // registered here
  long rank_messages = 0;  // messages between ranks, whole graph
  double wall_s = 0;       // submission to the last task's end (now() seconds)
  double t_submit = 0;     // now() at the first submission
};

// Throws ExecError when a task failed or the run stalled (StarPU drained,
// the session usable), UnrecoverableError when StarPU could not be drained
// (the process must end; under MPI, any failure: the other ranks wait).
GraphRunOutcome run_graph(const GraphRunSpec& spec);

}  // namespace rrfp
