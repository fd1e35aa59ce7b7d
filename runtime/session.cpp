#include "runtime/session.hpp"

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
                  const std::function<int(starpu_conf*)>& start, const std::function<void()>& stop, bool cuda) {
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
      start_cuda();
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

void StarpuSession::start_cuda() {
#ifndef STARPU_USE_CUDA
  throw SpecError("--cuda: this StarPU was built without CUDA (scripts/build-starpu.sh builds it with CUDA where nvcc is)");
#else
  const int D = ncpus_;
  // StarPU's share of each GPU's memory (MiB): the message handles, small
  // next to the model; LibTorch's caching allocator gets the rest. Without
  // a limit StarPU would budget 90% of the GPU for itself. The user's
  // STARPU_LIMIT_CUDA_MEM wins (docs/gpu.md).
  setenv("STARPU_LIMIT_CUDA_MEM", std::to_string(kStarpuCudaMemMiB).c_str(), 0);
  auto start = [&] {
    start_starpu(policy_, D, profiling_, "devices", [](starpu_conf* c) { return starpu_init(c); },
                 [] { starpu_shutdown(); }, true);
  };
  // StarPU's GPU index -> its CUDA workers, in worker order.
  auto by_gpu = [] {
    std::map<int, std::vector<int>> m;
    for (unsigned w = 0; w < starpu_worker_get_count(); ++w)
      if (starpu_worker_get_type(static_cast<int>(w)) == STARPU_CUDA_WORKER)
        m[starpu_worker_get_devid(static_cast<int>(w))].push_back(static_cast<int>(w));
    return m;
  };
  auto fewest = [](const std::map<int, std::vector<int>>& m) {
    size_t k = SIZE_MAX;
    for (const auto& [gpu, ws] : m) k = std::min(k, ws.size());
    return static_cast<int>(k);
  };
  start();
  auto gpus = by_gpu();
  if (gpus.empty()) {
    starpu_shutdown();
    throw SpecError("--cuda: StarPU found no usable CUDA device (none here, or hidden by CUDA_VISIBLE_DEVICES or STARPU_NCUDA)");
  }
  const int G = static_cast<int>(gpus.size()), per = (D + G - 1) / G;
  if (fewest(gpus) < per) {
    starpu_shutdown();
    if (const char* set = std::getenv("STARPU_NWORKER_PER_CUDA"))
      throw SpecError(fmt::format("--cuda: {} devices on {} GPU(s) need {} CUDA workers per GPU, but "
                                  "STARPU_NWORKER_PER_CUDA={}", D, G, per, set));
    setenv("STARPU_NWORKER_PER_CUDA", std::to_string(per).c_str(), 1);
    try {
      start();
    } catch (...) {
      unsetenv("STARPU_NWORKER_PER_CUDA");
      throw;
    }
    unsetenv("STARPU_NWORKER_PER_CUDA");  // the next session derives its own
    gpus = by_gpu();
    if (static_cast<int>(gpus.size()) != G || fewest(gpus) < per) {
      starpu_shutdown();
      throw SpecError(fmt::format("--cuda: {} devices need {} CUDA workers on each of {} GPU(s), but StarPU "
                                  "started fewer (STARPU_NMAXWORKERS?)", D, per, G));
    }
  }
  std::vector<std::vector<int>> list;
  for (auto& [gpu, ws] : gpus) list.push_back(ws);
  for (int d = 0; d < D; ++d) cuda_workers_.push_back(list[d / per][d % per]);
#endif
}

}  // namespace rrfp
