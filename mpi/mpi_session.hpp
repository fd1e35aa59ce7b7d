// MPI for multi-rank runs. MPI lives once per process (initialised on first
// use, finalised at exit); StarPU-MPI is opened and closed per run, like the
// single-process StarpuSession, so one process can run several graphs.
#pragma once

#include <cstddef>
#include <string>

#include "sched/policy_registry.hpp"

namespace rrfp {

struct MpiWorld {
  int rank = 0, size = 1;
};
// Initialises MPI (MPI_THREAD_SERIALIZED: StarPU-MPI's progress thread is
// the only caller while a run is open) on first use and returns this rank.
// Whether the process was started as one of several ranks is the driver's
// question (drivers/env_config.hpp), as is aborting them all.
MpiWorld mpi_world();

// MPI_Bcast of `bytes` raw bytes from `root` over MPI_COMM_WORLD. Only
// outside a run (StarPU-MPI closed), like every MPI call of ours.
void mpi_broadcast(void* data, int bytes, int root);

// MPI_Allreduce(MPI_MAX) of `n` doubles in place, over MPI_COMM_WORLD:
// merges per-stage records that only the stage's own rank filled in.
void mpi_max_in_place(double* data, int n);

// MPI_Allreduce(MPI_SUM) of `n` floats in place, over MPI_COMM_WORLD:
// merges values only one rank computed (the others hold exact zeros).
void mpi_sum_in_place(float* data, int n);

// Blocking MPI_Send / MPI_Recv of `bytes` raw bytes over MPI_COMM_WORLD,
// outside a run (the mirror reduction of replicated stages). Throws
// SpecError for messages over 2 GiB.
void mpi_send(const void* data, std::size_t bytes, int dest, int tag);
void mpi_recv(void* data, std::size_t bytes, int source, int tag);

// One StarPU-MPI instance: `ncpus` CPU workers on this rank, our policy
// or a built-in, MPI_COMM_WORLD. Throws SpecError like StarpuSession.
class MpiStarpuSession {
 public:
  MpiStarpuSession(const PolicyChoice& policy, int ncpus, bool profiling);
  ~MpiStarpuSession();
  MpiStarpuSession(const MpiStarpuSession&) = delete;
  MpiStarpuSession& operator=(const MpiStarpuSession&) = delete;

  // StarPU worker id of this rank's i-th CPU worker (its i-th local device).
  int worker_of_local(int i) const;
};

}  // namespace rrfp
