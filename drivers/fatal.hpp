// How a driver stops: the library throws, only drivers end the process.
#pragma once

#include <string>

namespace rrfp::cli {

// Prints "rrfp: rank R: error: msg" on stderr and ends every rank
// (MPI_Abort when MPI is up): the only safe stop once ranks wait on each
// other. Without MPI: "rrfp: error: msg" and _Exit(code).
[[noreturn]] void abort_all_ranks(const std::string& msg, int code = 3);

// Whether other ranks of this job may be waiting on this one: MPI is up
// with more than one rank. An error then stops the whole job
// (abort_all_ranks); returning from main would leave them waiting, for
// example when only rank 0 checks its output files.
bool other_ranks_may_wait();

// Under a launcher: a rank killed with SIGTERM (the launcher stopping the
// others after one failed) says so on stderr instead of vanishing.
void note_sigterm_from_launcher(const std::string& rank);

}  // namespace rrfp::cli
