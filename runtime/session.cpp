#include "runtime/session.hpp"

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

namespace {
std::atomic<bool> g_open{false};
// The session execute() keeps between runs; destroyed (StarPU shut down) at
// exit, before the policy structs it points to.
std::unique_ptr<StarpuSession>& kept() {
  static std::unique_ptr<StarpuSession> s;
  return s;
}
}  // namespace

StarpuSession& StarpuSession::reuse(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda) {
  auto& k = kept();
  if (k && k->policy_.name == policy.name && k->policy_.policy == policy.policy && k->ncpus_ == ncpus &&
      k->profiling_ == profiling && k->cuda_ == cuda)
    return *k;
  k.reset();
  k = std::make_unique<StarpuSession>(policy, ncpus, profiling, cuda);
  return *k;
}

void StarpuSession::close_reused() { kept().reset(); }

void StarpuSession::abandon() { (void)kept().release(); }

void StarpuSession::init_workers_once(const std::function<void()>& init) {
  if (workers_initialised_ || !init) return;
  workers_initialised_ = true;
  // Pinned tasks, one per worker, that bypass the policy; returns when all ran.
  starpu_execute_on_each_worker([](void* f) { (*static_cast<const std::function<void()>*>(f))(); },
                                const_cast<std::function<void()>*>(&init), cuda_ ? STARPU_CUDA : STARPU_CPU);
}

int max_cpu_workers() { return STARPU_MAXCPUS; }

void start_starpu(const PolicyChoice& policy, int ncpus, bool profiling, const char* who,
                  const std::function<int(starpu_conf*)>& start, const std::function<void()>& stop, bool cuda,
                  const std::vector<int>& cuda_gpus) {
  if (ncpus < 1) throw SpecError(fmt::format("a run needs at least one device ({} = {})", who, ncpus));
  if (!cuda && ncpus > max_cpu_workers())
    throw SpecError(fmt::format("{} {} requested but this StarPU has at most {} CPU workers (one per device)", ncpus,
                                who, max_cpu_workers()));
  std::optional<std::string> saved;
  if (const char* s = std::getenv("STARPU_SCHED")) saved = s;
  unsetenv("STARPU_SCHED");
  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = cuda ? 0 : ncpus;  // explicit: StarPU-MPI then reserves no core for its progress thread
  conf.ncuda = cuda ? -1 : 0;
  if (cuda && !cuda_gpus.empty()) {  // these GPUs only (STARPU_WORKERS_CUDAID's role)
    conf.ncuda = static_cast<int>(cuda_gpus.size());
    conf.use_explicit_workers_cuda_gpuid = 1;
    for (size_t i = 0; i < cuda_gpus.size(); ++i) conf.workers_cuda_gpuid[i] = static_cast<unsigned>(cuda_gpus[i]);
  }
  conf.nopencl = 0;
  conf.sched_policy_name = policy.policy ? nullptr : policy.builtin.c_str();
  conf.sched_policy = policy.policy;
  // Workers emulate devices and mostly sleep; binding them to the few cores
  // of a small machine only produces warnings.
  setenv("STARPU_WORKERS_NOBIND", "1", 0);
  const int rc = start(&conf);
  if (saved) setenv("STARPU_SCHED", saved->c_str(), 1);
  if (rc != 0 && cuda)
    throw SpecError(fmt::format("--cuda: StarPU started no CUDA worker ({}): no usable GPU here, or hidden by "
                                "CUDA_VISIBLE_DEVICES or STARPU_NCUDA", rc));
  if (rc == -ENODEV)
    throw SpecError("starting StarPU failed: no worker to start (-ENODEV); STARPU_NCPU=0 leaves the stages no CPU "
                    "worker");
  if (rc != 0) throw SpecError(fmt::format("starting StarPU failed ({})", rc));
  if (cuda) {
    if (profiling) starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
    return;
  }
  if (const int got = static_cast<int>(starpu_cpu_worker_get_count()); got < ncpus) {
    stop();
    throw SpecError(fmt::format("{} {} requested but StarPU started only {} CPU workers (check STARPU_NCPU)", ncpus,
                                who, got));
  }
  if (profiling) starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
}

StarpuSession::StarpuSession(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda)
    : policy_(policy), ncpus_(ncpus), profiling_(profiling), cuda_(cuda) {
  if (g_open && kept() && kept().get() != this) kept().reset();  // a direct session replaces the kept one
  if (g_open.exchange(true)) throw SpecError("a StarPU session is already open in this process");
  try {
    if (cuda)
      cuda_workers_ = start_starpu_cuda(policy, ncpus, profiling, "devices", [](starpu_conf* c) { return starpu_init(c); },
                                        [] { starpu_shutdown(); });
    else
      start_starpu(policy, ncpus, profiling, "devices", [](starpu_conf* c) { return starpu_init(c); },
                   [] { starpu_shutdown(); });
  } catch (...) {
    g_open = false;
    throw;
  }
}

StarpuSession::~StarpuSession() {
  starpu_shutdown();
  g_open = false;
}

int StarpuSession::worker_of_device(int d) const {
  return cuda_ ? cuda_workers_.at(d) : starpu_worker_get_by_type(STARPU_CPU_WORKER, d);
}

}  // namespace rrfp
