// The environment variables of rrfp's own (StarPU reads its STARPU_* itself),
// turned into typed configuration here and nowhere else in the program.
#pragma once

#include <functional>
#include <string>

#include "hints/hint.hpp"

namespace rrfp::cli {

// RRFP_MPI_FAIL_TASK / RRFP_MPI_KILL_TASK / RRFP_MPI_HANG_TASK=LABEL: the
// task that throws, kills its rank or hangs (tests); empty when none is set.
std::function<void(int call)> fault_hook_from_env(const Hint& hint);
// RRFP_MPI_TIMEOUT_S: seconds without progress before a rank gives up; 0 = unset.
double mpi_timeout_from_env();
// RRFP_FAIL_TASK (a task label, or opt<s> for stage s's optimizer step) and RRFP_FAIL_STEP.
std::string fail_task_from_env();
int fail_step_from_env();
// A command that does not read RRFP_FAIL_TASK / RRFP_FAIL_STEP refuses
// them: a failure that can never fire would pass a fault test silently.
// `instead` says what that command offers (may be empty).
void refuse_train_fault_env(const char* command, const char* instead);

// RRFP_INFLIGHT_SLACK (raise every in-flight cap by K); 0 when unset.
int inflight_slack_from_env();
// True when a launcher started this process as one of several ranks
// (mpirun/mpiexec of Open MPI, MPICH/PMI, srun with PMI or PMIx), or when
// RRFP_MPI=1 forces the multi-rank path (RRFP_MPI=0 disables it).
bool launched_under_mpi();
// STARPU_NCPU(S), STARPU_NCUDA, STARPU_NOPENCL: non-negative integers
// (StarPU aborts on anything else). Throws SpecError.
void check_starpu_worker_counts();
// This process's rank as the launcher exported it, "?" when it did not.
std::string launcher_rank();

}  // namespace rrfp::cli
