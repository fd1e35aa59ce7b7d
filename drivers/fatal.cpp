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

// MPI initialised and not yet finalised.
bool mpi_up() {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  if (inited) MPI_Finalized(&finalized);
  return inited && !finalized;
}

}  // namespace

void abort_all_ranks(const std::string& msg, int code) {
  const bool up = mpi_up();
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

int stop_with_error(const std::string& msg, int code) {
  int size = 1;
  if (mpi_up()) MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) abort_all_ranks(msg, code);
  std::fprintf(stderr, "rrfp: error: %s\n", msg.c_str());
  return code;
}

void note_sigterm_from_launcher(const std::string& rank) {
  std::snprintf(g_term_msg, sizeof g_term_msg, "rrfp: rank %s: terminated by the launcher (another rank stopped)\n",
                rank.c_str());
  std::signal(SIGTERM, on_sigterm);
}

}  // namespace rrfp::cli
