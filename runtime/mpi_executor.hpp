// Runs a hint's task graph over several MPI ranks with StarPU-MPI.
//
// Ownership: device d belongs to rank d / devices_per_rank; a task runs on
// the rank of its device, on that rank's worker for the device (the
// single-process placement, per rank). Every rank builds the same graph
// and submits only its own tasks; each rank's policy (rrfp, rrfp-fixed,
// built-ins) arbitrates among its own ready tasks.
//
// Transfers: an edge whose producer and consumer live on different ranks is
// a message of its own, sent by starpu_mpi_isend_detached as soon as the
// producer finishes and received by a starpu_mpi_irecv_detached that every
// consumer rank posts before the first task is submitted. The message tag is
// the edge's index in the graph, so messages between one pair of ranks may
// arrive in any order and each one makes exactly its consumer ready: no
// receive waits behind compute or behind another receive. On the consumer
// rank a transfer task (no codelet) stands for the edge; the receive
// callback releases it after the edge's link delay. Edges between devices of
// one rank are transfer tasks as in executor.hpp.
//
// Tensor parallelism (ExecOptions::tensor_parallel = T): slot d*T+t (member
// t of device d) lives on rank slot / devices_per_rank; every edge exists
// once per member. A leader whose followers are on other ranks sends each
// of them one decision message per task it starts (the task id; tag by
// device and position), received early like the edges and handed to the
// policy in the leader's order (policy_follow).
//
// Faults: a body that throws, or no progress on a rank for
// `stall_timeout_s`, prints "rrfp: rank R: error: ..." and MPI_Abort()s
// every rank. A rank that dies is noticed by the launcher, which stops the
// others.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/executor.hpp"

namespace rrfp {

// What a cross-rank edge carries. Empty functions: an 8-byte token.
struct MpiPayload {
  // Bytes of the message for the k-th input of `consumer` (>= 1).
  std::function<std::size_t(int consumer, int k)> bytes;
  // On the producer's rank, right after the producer ran: fill `dst`.
  std::function<void(int consumer, int k, void* dst)> pack;
  // On the consumer's rank, just before the consumer runs.
  std::function<void(int consumer, int k, const void* src)> unpack;
};

class MpiTpComm;

struct MpiOptions {
  int devices_per_rank = 1;  // devices of the hint x tensor-parallel = ranks * devices_per_rank
  MpiPayload payload;        // with tensor parallelism `consumer` is the member task, member * tasks + id
  MpiTpComm* tp_comm = nullptr;  // opened and closed around the run (runtime/mpi_tp_comm.hpp)
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
MpiExecResult execute_mpi(const Hint& hint, const std::function<void(int task)>& body, const ExecOptions& opt,
                          const MpiOptions& mopt);

// execute_mpi() with the shape of execute(), for callers that take an
// executor (rrfp bench): every rank gets the merged ExecResult.
using Executor = std::function<ExecResult(const Hint&, const std::function<void(int)>&, const ExecOptions&)>;
Executor mpi_executor(const MpiOptions& mopt);

}  // namespace rrfp
