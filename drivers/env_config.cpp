#include "drivers/env_config.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "runtime/fault_hook.hpp"

namespace rrfp::cli {

namespace {
std::string env(const char* name) {
  const char* s = std::getenv(name);
  return s ? s : "";
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

int fail_step_from_env() {
  const std::string s = env("RRFP_FAIL_STEP");
  if (s.empty()) return -1;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (*end || v < 1) throw SpecError(fmt::format("RRFP_FAIL_STEP='{}' is not a step number", s));
  return static_cast<int>(v);
}

}  // namespace rrfp::cli
