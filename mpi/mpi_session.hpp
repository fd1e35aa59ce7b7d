// MPI for multi-rank runs. MPI lives once per process (initialised on first
// use, finalised at exit); StarPU-MPI is kept open between runs, like the
// single-process StarpuSession, and replaced when a run needs another
// policy or worker count, so one process can run several graphs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.hpp"
#include "sched/policy_registry.hpp"

namespace rrfp {

struct MpiWorld {
  int rank = 0, size = 1;
};
// Initialises MPI on first use and returns this rank. MPI_THREAD_MULTIPLE:
// StarPU-MPI stays open between runs (MpiStarpuSession::reuse), so its
// progress thread and our own calls (on rrfp_mpi_comm(), mpi_comm.hpp) run
// at once.
// Whether the process was started as one of several ranks is the driver's
// question (drivers/env_config.hpp), as is aborting them all.
MpiWorld mpi_world();

// MPI_Bcast of `bytes` raw bytes from `root`. Between runs, like every MPI
// call of ours, all on rrfp_mpi_comm().
void mpi_broadcast(void* data, int bytes, int root);

// MPI_Allreduce(MPI_MAX) of `n` doubles in place:
// merges per-stage records that only the stage's own rank filled in.
void mpi_max_in_place(double* data, int n);

// Whether every rank passed the same text (its hash, one MPI_Allreduce):
// the ranks of one job check that they were started with the same run.
bool mpi_all_equal(const std::string& text);

// MPI_Allreduce(MPI_SUM) of `n` floats in place:
// merges values only one rank computed (the others hold exact zeros).
void mpi_sum_in_place(float* data, int n);
void mpi_sum_in_place(double* data, int n);

// Blocking MPI_Send / MPI_Recv of `bytes` raw bytes, between runs (the
// mirror reduction of replicated stages). Throws
// SpecError for messages over 2 GiB.
void mpi_send(const void* data, std::size_t bytes, int dest, int tag);
void mpi_recv(void* data, std::size_t bytes, int source, int tag);

// One StarPU-MPI instance: `ncpus` CPU workers on this rank, our policy
// or a built-in, MPI_COMM_WORLD. Throws SpecError like StarpuSession.
// cuda: `ncpus` devices as CUDA workers instead, on this rank's share of
// its node's GPUs (GpuShare: the ranks of a node split the GPUs they all
// see; several ranks share a GPU when there are fewer GPUs than ranks).
class MpiStarpuSession {
 public:
  MpiStarpuSession(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda = false);
  ~MpiStarpuSession();
  MpiStarpuSession(const MpiStarpuSession&) = delete;
  MpiStarpuSession& operator=(const MpiStarpuSession&) = delete;

  // The session kept between runs (every rank runs the same sequence of
  // graphs, so all keep or replace theirs alike): reused when the policy,
  // worker count and profiling match, else the kept one is shut down and a
  // new one opened. Shut down before MPI_Finalize at exit. abandon(): a
  // failed run left tasks in StarPU, the process is about to abort.
  static MpiStarpuSession& reuse(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda = false);
  static void close_reused();
  static void abandon();

  // StarPU worker id of this rank's i-th local device (a CPU worker, or a
  // CUDA worker).
  int worker_of_local(int i) const;

 private:
  PolicyChoice policy_;
  int ncpus_ = 0;
  bool profiling_ = false;
  bool cuda_ = false;
  std::vector<int> cuda_workers_;  // per local device
};

// This rank among the ranks of its node (MPI_COMM_TYPE_SHARED).
GpuShare node_share();

// Whether this rank has a core beyond `workers` and StarPU-MPI's progress
// thread, which polls without a pause once the workers leave it one
// (mpi_poll_backoff_us): its affinity, and its share of its node's cores
// among the node's ranks (cores_of_rank).
bool rank_has_spare_core(int workers);

}  // namespace rrfp
