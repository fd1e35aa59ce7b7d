// `--rank-transport starpu-mpi|ordered` for the commands that run under
// mpirun/srun (rrfp bench, rrfp train): how messages between ranks travel
// (docs/mpi.md, "Rank transports").
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "graph/task_graph.hpp"
#include "mpi/mpi_executor.hpp"

namespace rrfp::cli {

inline void add_rank_transport_flag(CLI::App* app, std::string* value) {
  app->add_option("--rank-transport", *value,
                  "under mpirun/srun: starpu-mpi (StarPU-MPI infers the transfers) or ordered (send and receive tasks "
                  "in one order per rank pair, the design NCCL needs; docs/mpi.md)")
      ->check(CLI::IsMember({"starpu-mpi", "ordered"}))
      ->capture_default_str();
}

inline RankTransportKind rank_transport_from_flag(const std::string& value, bool multi_rank) {
  if (value != "ordered") return RankTransportKind::StarpuMpi;
  if (!multi_rank)
    throw SpecError("--rank-transport ordered moves messages between ranks: launch with mpirun or srun (docs/mpi.md)");
  return RankTransportKind::Ordered;
}

}  // namespace rrfp::cli
