#include "drivers/env_config.hpp"

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/fault_hook.hpp"

namespace rrfp::cli {

namespace {
std::string env(const char* name) {
  const char* s = std::getenv(name);
  return s ? s : "";
}

// `s` as a whole integer in [lo, hi]; false for anything else.
bool integer_in(const std::string& s, long lo, long hi, long& v) {
  char* end = nullptr;
  v = std::strtol(s.c_str(), &end, 10);
  return !s.empty() && !*end && v >= lo && v <= hi;
}
}  // namespace

std::function<void(int)> fault_hook_from_env(const Hint& hint) {
  const TaskGraph& g = *hint.graph;
  for (auto [var, action] : {std::pair{"RRFP_MPI_FAIL_TASK", FaultAction::Throw},
                             std::pair{"RRFP_MPI_KILL_TASK", FaultAction::Kill},
                             std::pair{"RRFP_MPI_HANG_TASK", FaultAction::Hang}})
    if (std::string t = env(var); !t.empty()) return make_fault_hook(g, t, action, var);
  return {};
}

double mpi_timeout_from_env() {
  const std::string t = env("RRFP_MPI_TIMEOUT_S");
  if (t.empty()) return 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end || !(v > 0)) throw SpecError(fmt::format("RRFP_MPI_TIMEOUT_S='{}' is not a positive number", t));
  return v;
}

std::string fail_task_from_env() { return env("RRFP_FAIL_TASK"); }

void refuse_train_fault_env(const char* command, const char* instead) {
  for (const char* var : {"RRFP_FAIL_TASK", "RRFP_FAIL_STEP"})
    if (!env(var).empty())
      throw SpecError(fmt::format("{} is set, and only rrfp train reads it: {} would never fail{}", var, command,
                                  instead));
}

int fail_step_from_env() {
  const std::string s = env("RRFP_FAIL_STEP");
  if (s.empty()) return -1;
  long v = 0;
  if (!integer_in(s, 1, INT_MAX, v)) throw SpecError(fmt::format("RRFP_FAIL_STEP='{}' is not a step number", s));
  return static_cast<int>(v);
}

int inflight_slack_from_env() {
  const std::string s = env("RRFP_INFLIGHT_SLACK");
  if (s.empty()) return 0;
  long v = 0;
  if (!integer_in(s, 0, 1000000, v))
    throw SpecError(fmt::format("RRFP_INFLIGHT_SLACK='{}' is not an integer from 0 to 1000000", s));
  return static_cast<int>(v);
}

void check_starpu_worker_counts() {
  // StarPU asserts (aborts with a core dump) on a worker count that is not
  // a non-negative integer.
  for (const char* var : {"STARPU_NCPU", "STARPU_NCPUS", "STARPU_NCUDA", "STARPU_NOPENCL"}) {
    const std::string s = env(var);
    long v = 0;
    if (!s.empty() && !integer_in(s, 0, 1000000, v))
      throw SpecError(fmt::format("{}='{}' is not a worker count (a non-negative integer)", var, s));
  }
}

bool launched_under_mpi() {
  auto number = [](const char* name) {
    const std::string s = env(name);
    return s.empty() ? -1 : std::atoi(s.c_str());
  };
  if (const std::string forced = env("RRFP_MPI"); !forced.empty()) {
    if (forced != "0" && forced != "1") throw SpecError(fmt::format("RRFP_MPI='{}' must be 0 or 1", forced));
    return forced == "1";
  }
  // Open MPI, MPICH/Hydra and Slurm's PMI/PMIx all export the world size.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (number(v) > 1) return true;
  return false;
}

std::string launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (std::string r = env(v); !r.empty()) return r;
  return "?";
}

}  // namespace rrfp::cli
