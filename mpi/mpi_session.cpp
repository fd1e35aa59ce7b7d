#include "mpi/mpi_session.hpp"

#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <mpi.h>
#include <starpu_mpi.h>

#include "graph/pipeline_spec.hpp"
#include "runtime/executor.hpp"
#include "runtime/session.hpp"

namespace rrfp {

namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

MpiWorld mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      throw UnrecoverableError("this MPI does not provide MPI_THREAD_SERIALIZED, which StarPU-MPI needs");
    std::atexit(finalize_at_exit);
  }
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

void mpi_broadcast(void* data, int bytes, int root) { MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD); }

void mpi_max_in_place(double* data, int n) { MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); }

void mpi_sum_in_place(float* data, int n) { MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }

namespace {
int message_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw SpecError(fmt::format("an MPI message of {} bytes is over MPI's int count", bytes));
  return static_cast<int>(bytes);
}
}  // namespace

void mpi_send(const void* data, std::size_t bytes, int dest, int tag) {
  MPI_Send(data, message_count(bytes), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
}

void mpi_recv(void* data, std::size_t bytes, int source, int tag) {
  MPI_Recv(data, message_count(bytes), MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

MpiStarpuSession::MpiStarpuSession(const PolicyChoice& policy, int ncpus, bool profiling) {
  mpi_world();
  start_starpu(
      policy, ncpus, profiling, "devices per rank",
      [](starpu_conf* c) { return starpu_mpi_init_conf(nullptr, nullptr, /*initialize_mpi=*/0, MPI_COMM_WORLD, c); },
      [] { starpu_mpi_shutdown(); });
}

MpiStarpuSession::~MpiStarpuSession() { starpu_mpi_shutdown(); }

int MpiStarpuSession::worker_of_local(int i) const { return starpu_worker_get_by_type(STARPU_CPU_WORKER, i); }

}  // namespace rrfp
