// `--rank-transport starpu-mpi|ordered` (default RRFP_RANK_TRANSPORT) for
// the commands that run under mpirun/srun (rrfp bench, rrfp train): how
// messages between ranks travel (docs/mpi.md, "Rank transports").
#pragma once

#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "graph/task_graph.hpp"
#include "mpi/mpi_executor.hpp"

namespace rrfp::cli {

// The flag's default: RRFP_RANK_TRANSPORT, else starpu-mpi.
inline CLI::Option* add_rank_transport_flag(CLI::App* app, std::string* value) {
  if (const char* env = std::getenv("RRFP_RANK_TRANSPORT"); env && *env) *value = env;
  return app
      ->add_option("--rank-transport", *value,
                   "under mpirun/srun: starpu-mpi (StarPU-MPI infers the transfers) or ordered (send and receive "
                   "tasks in one order per rank pair, the design NCCL needs: MPI moves the bytes, NCCL with --cuda; "
                   "default RRFP_RANK_TRANSPORT; docs/mpi.md)")
      ->check(CLI::IsMember({"starpu-mpi", "ordered"}))
      ->capture_default_str();
}

// `flag`: the option add_rank_transport_flag returned. One process has no
// messages between ranks: the flag is refused there, the environment's
// default ignored.
inline RankTransportKind rank_transport_from_flag(const std::string& value, bool multi_rank, const CLI::Option* flag) {
  if (value != "ordered" && value != "starpu-mpi")  // from the environment: CLI11 checked the flag
    throw SpecError("RRFP_RANK_TRANSPORT='" + value + "': use starpu-mpi or ordered");
  if (value != "ordered") return RankTransportKind::StarpuMpi;
  if (!multi_rank && flag->count() == 0) return RankTransportKind::StarpuMpi;
  if (!multi_rank)
    throw SpecError("--rank-transport ordered moves messages between ranks: launch with mpirun or srun (docs/mpi.md)");
  return RankTransportKind::Ordered;
}

// `--devices-per-rank K` splits the devices over ranks: refused in one
// process, where every device is a worker of this one.
inline void check_devices_per_rank_flag(bool multi_rank, const CLI::Option* flag) {
  if (!multi_rank && flag && flag->count() > 0)
    throw SpecError("--devices-per-rank splits the devices over ranks: launch 2 or more ranks with mpirun or srun "
                    "(or set RRFP_MPI=1; docs/mpi.md)");
}

}  // namespace rrfp::cli
