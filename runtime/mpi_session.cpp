#include "runtime/mpi_session.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <mpi.h>
#include <starpu_mpi.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "graph/pipeline_spec.hpp"
#include "runtime/session.hpp"

namespace rrfp {

namespace {

int env_int(const char* name) {
  const char* s = std::getenv(name);
  return s && *s ? std::atoi(s) : -1;
}

char g_term_msg[96];

// Async-signal-safe: write(2) and _exit only.
void on_sigterm(int) {
  ssize_t rc = write(2, g_term_msg, std::strlen(g_term_msg));
  (void)rc;
  _exit(143);
}

// StarPU-MPI 1.3's progress thread ("MPI") polls without pause while a
// receive is posted, i.e. for a whole run here. RRFP_MPI_PROGRESS_NICE=N
// renices it, so that with fewer cores than threads it yields time to the
// workers. Off by default: at 4 ranks on 2 cores the polling workers then
// starved it and messages took seconds (see docs/mpi.md).
void renice_progress_thread() {
  const int nice_value = env_int("RRFP_MPI_PROGRESS_NICE");
  if (nice_value <= 0) return;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "MPI") setpriority(PRIO_PROCESS, std::atoi(e->d_name), nice_value);
  }
  closedir(dir);
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool mpi_launched() {
  int forced = env_int("RRFP_MPI");
  if (forced >= 0) return forced != 0;
  // Open MPI, MPICH/Hydra and Slurm's PMI/PMIx all export the world size.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (env_int(v) > 1) return true;
  return false;
}

MpiWorld mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      std::fprintf(stderr, "rrfp: this MPI does not provide MPI_THREAD_SERIALIZED, which StarPU-MPI needs\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    std::atexit(finalize_at_exit);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::snprintf(g_term_msg, sizeof g_term_msg, "rrfp: rank %d: terminated by the launcher (another rank stopped)\n",
                  rank);
    std::signal(SIGTERM, on_sigterm);
  }
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

void mpi_broadcast(void* data, int bytes, int root) { MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD); }

void mpi_abort(const std::string& msg, int code) {
  int rank = -1;
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "rrfp: rank %d: error: %s\n", rank, msg.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  if (inited) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MpiStarpuSession::MpiStarpuSession(const PolicyChoice& policy, int ncpus, bool profiling) {
  if (ncpus < 1) throw SpecError("a rank needs at least one device");
  if (ncpus > max_cpu_workers())
    throw SpecError(fmt::format("{} devices per rank requested but this StarPU has at most {} CPU workers", ncpus,
                                max_cpu_workers()));
  mpi_world();
  // As in StarpuSession: we resolved STARPU_SCHED ourselves; hide it from
  // StarPU so it does not warn about our policy names.
  std::optional<std::string> saved;
  if (const char* s = std::getenv("STARPU_SCHED")) saved = s;
  unsetenv("STARPU_SCHED");
  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = ncpus;  // explicit: StarPU-MPI then reserves no core for its progress thread
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.sched_policy_name = policy.policy ? nullptr : policy.builtin.c_str();
  conf.sched_policy = policy.policy;
  setenv("STARPU_WORKERS_NOBIND", "1", 0);
  int rc = starpu_mpi_init_conf(nullptr, nullptr, /*initialize_mpi=*/0, MPI_COMM_WORLD, &conf);
  if (saved) setenv("STARPU_SCHED", saved->c_str(), 1);
  if (rc != 0) throw SpecError(fmt::format("starpu_mpi_init_conf failed ({})", rc));
  if (static_cast<int>(starpu_cpu_worker_get_count()) < ncpus) {
    int got = static_cast<int>(starpu_cpu_worker_get_count());
    starpu_mpi_shutdown();
    throw SpecError(fmt::format("{} devices per rank requested but StarPU started only {} CPU workers", ncpus, got));
  }
  if (profiling) starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  renice_progress_thread();
}

MpiStarpuSession::~MpiStarpuSession() { starpu_mpi_shutdown(); }

int MpiStarpuSession::worker_of_local(int i) const { return starpu_worker_get_by_type(STARPU_CPU_WORKER, i); }

}  // namespace rrfp
