// The communicator of our own MPI calls (broadcasts, reductions, the
// records gathered after a run, the mirror reduction): a duplicate of
// MPI_COMM_WORLD, so they never match StarPU-MPI's messages, which use
// MPI_COMM_WORLD itself, while the kept StarPU-MPI session is open.
#pragma once

#include <mpi.h>

#include <cstddef>

namespace rrfp {

// Initialises MPI first if needed (mpi_world()).
MPI_Comm rrfp_mpi_comm();
// The mirror reduction's (mpi/mpi_messages.hpp): it may run beside the
// graph, StarPU-MPI and the calls above, on a thread of its own.
MPI_Comm rrfp_mirror_comm();

// `bytes` as MPI's int count of MPI_BYTEs; SpecError over 2 GiB.
int mpi_message_count(std::size_t bytes);

}  // namespace rrfp
