// Runs a hint's task graph over several MPI ranks with StarPU-MPI.
//
// Ownership: device d belongs to rank d / devices_per_rank (with tensor
// parallelism, slot d*T+t to rank slot / devices_per_rank); a task runs on
// the rank of its slot, on that rank's worker for it. Every rank goes
// through the same submitter as one process (runtime/graph_run.hpp): each
// handle is registered with its owner rank (starpu_mpi_data_register), each
// task is built with starpu_mpi_task_build(..., STARPU_EXECUTE_ON_NODE, r)
// and StarPU-MPI posts the sends and receives its data accesses imply. A
// message is received by tag, so messages between one pair of ranks may
// arrive in any order and each makes exactly its consumer ready.
//
// Tensor parallelism across ranks: the leader's decisions travel as
// messages of their own (mpi/tp_decisions.hpp).
//
// Faults: a body that throws, or no progress on a rank for the timeout,
// throws UnrecoverableError on that rank (the driver prints
// "rrfp: rank R: error: ..." and MPI_Abort()s every rank). A rank that dies
// is noticed by the launcher, which stops the others.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/executor.hpp"

namespace rrfp {

class MpiTpComm;
class MessageChannels;

// How messages between ranks travel (docs/mpi.md, "Rank transports").
enum class RankTransportKind {
  StarpuMpi,  // StarPU-MPI infers sends and receives from the tasks' data (default)
  Ordered,    // send and receive tasks in one order per rank pair, as NCCL needs (mpi/ordered_channels.hpp)
};

struct MpiOptions {
  int devices_per_rank = 1;  // devices of the hint x tensor-parallel = ranks * devices_per_rank
  double timeout_s = 0;      // no progress on a rank for this long: failed; 0 = ExecOptions::stall_timeout_s
  MpiTpComm* tp_comm = nullptr;  // opened and closed around the run (mpi/mpi_tp_comm.hpp)
  RankTransportKind transport = RankTransportKind::StarpuMpi;
  MessageChannels* channels = nullptr;  // Ordered: these instead of the process's own (tests: a wrong design)
};

struct MpiExecResult {
  int rank = 0, ranks = 1, devices_per_rank = 1;
  long messages = 0;  // cross-rank edges of the whole graph
  // The whole run, merged, on every rank. Worker ids are global (rank * K
  // + local worker index, which equals the device when placement holds);
  // times count from the common start after a barrier, on each rank's
  // steady clock (exact on one host, offset by clock skew across hosts).
  ExecResult exec;
  std::vector<int> task_rank;  // rank that ran each task
  bool root() const { return rank == 0; }
};

// Collective over MPI_COMM_WORLD: every rank calls it with the same hint and
// options. Throws SpecError (on every rank alike) for bad configuration;
// aborts all ranks on a failure during the run.
MpiExecResult execute_mpi(const Hint& hint, const TaskBody& body, const ExecOptions& opt, const MpiOptions& mopt);

// execute_mpi() with the shape of execute(), for callers that take an
// executor (rrfp bench): every rank gets the merged ExecResult.
using Executor = std::function<ExecResult(const Hint&, const TaskBody&, const ExecOptions&)>;
Executor mpi_executor(const MpiOptions& mopt);

// Opens (or keeps) the StarPU-MPI session a run with these options will
// use, on every rank: with --cuda StarPU must start before the caller's
// first CUDA call (its bus calibration may reset the GPU). Returns the GPU
// (CUDA device id) of each of this rank's devices; empty without --cuda.
std::vector<int> prepare_mpi_session(const ExecOptions& opt, int devices_per_rank);

}  // namespace rrfp
