// How a driver stops: the library throws, only drivers end the process.
#pragma once

#include <string>

namespace rrfp::cli {

// Prints "rrfp: rank R: error: msg" on stderr and ends every rank
// (MPI_Abort when MPI is up): the only safe stop once ranks wait on each
// other. Without MPI: "rrfp: error: msg" and _Exit(code).
[[noreturn]] void abort_all_ranks(const std::string& msg, int code = 3);

// An error the library threw: prints "rrfp: error: msg" and returns
// `code` for main to return. Under mpirun with several ranks, once MPI is
// up, the other ranks may be waiting on this one (rank 0 alone checks the
// output files and writes checkpoints): it stops them all
// (abort_all_ranks) instead of leaving them waiting.
int stop_with_error(const std::string& msg, int code);

// Under a launcher: a rank killed with SIGTERM (the launcher stopping the
// others after one failed) says so on stderr instead of vanishing.
void note_sigterm_from_launcher(const std::string& rank);

}  // namespace rrfp::cli
