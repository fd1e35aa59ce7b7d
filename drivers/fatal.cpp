#include "drivers/fatal.hpp"

#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rrfp::cli {

namespace {

char g_term_msg[96];

// Async-signal-safe: write(2) and _exit only.
void on_sigterm(int) {
  ssize_t rc = write(2, g_term_msg, std::strlen(g_term_msg));
  (void)rc;
  _exit(143);
}

}  // namespace

void abort_all_ranks(const std::string& msg, int code) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  if (inited) MPI_Finalized(&finalized);
  const bool up = inited && !finalized;
  int rank = -1;
  if (up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (up)
    std::fprintf(stderr, "rrfp: rank %d: error: %s\n", rank, msg.c_str());
  else
    std::fprintf(stderr, "rrfp: error: %s\n", msg.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  if (up) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

bool other_ranks_may_wait() {
  int inited = 0, finalized = 0, size = 1;
  MPI_Initialized(&inited);
  if (inited) MPI_Finalized(&finalized);
  if (!inited || finalized) return false;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

void note_sigterm_from_launcher(const std::string& rank) {
  std::snprintf(g_term_msg, sizeof g_term_msg, "rrfp: rank %s: terminated by the launcher (another rank stopped)\n",
                rank.c_str());
  std::signal(SIGTERM, on_sigterm);
}

}  // namespace rrfp::cli
