// StarPU with devices as CUDA workers (ExecOptions::cuda, docs/gpu.md):
// which GPUs a process takes, and how its devices map onto their workers.
// Shared by the one-process session and StarPU-MPI's (one per rank), as is
// how a rank shares its node's cores with StarPU-MPI's progress thread.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"
#include "runtime/session.hpp"

namespace rrfp {

// The longest pause of StarPU-MPI's progress thread between two polls for
// an envelope on a rank without a spare core, in microseconds: an envelope
// then waits at most this long (plus the timer's slack). perf/RESULTS.md,
// "StarPU-MPI's progress thread", measured 0 to 5000.
constexpr int kMpiPollBackoffMaxUs = 200;

int cores_of_rank(int affinity_cores, int node_cores, int ranks_of_node) {
  const int share = node_cores > 0 ? node_cores / std::max(1, ranks_of_node) : affinity_cores;
  return std::max(1, std::min(affinity_cores, share));
}

int mpi_poll_backoff_us(int cores, int workers) { return cores > workers ? 0 : kMpiPollBackoffMaxUs; }

std::vector<int> gpus_of_share(const std::vector<int>& found, GpuShare share) {
  const int G = static_cast<int>(found.size());
  if (share.of <= 1 || G == 0) return found;
  if (share.index < 0 || share.index >= share.of)
    throw SpecError(fmt::format("GPU share {} of {} does not exist", share.index, share.of));
  if (G < share.of) return {found[share.index % G]};  // several ranks on one GPU
  // Contiguous shares, sizes differing by at most one.
  const int first = share.index * G / share.of, last = (share.index + 1) * G / share.of;
  return std::vector<int>(found.begin() + first, found.begin() + last);
}

std::vector<int> start_starpu_cuda(const PolicyChoice& policy, int devices, bool profiling, const char* who,
                                   const std::function<int(starpu_conf*)>& start, const std::function<void()>& stop,
                                   GpuShare share, const std::function<int(int)>& agree) {
#ifndef STARPU_USE_CUDA
  (void)policy, (void)devices, (void)profiling, (void)who, (void)start, (void)stop, (void)share, (void)agree;
  throw SpecError("--cuda: this StarPU was built without CUDA (scripts/build-starpu.sh builds it with CUDA where nvcc is)");
#else
  const int D = devices;
  // StarPU's share of each GPU's memory (MiB): the message handles, small
  // next to the model; LibTorch's caching allocator gets the rest. Without
  // a limit StarPU would budget 90% of the GPU for itself. The user's
  // STARPU_LIMIT_CUDA_MEM wins (docs/gpu.md).
  setenv("STARPU_LIMIT_CUDA_MEM", std::to_string(kStarpuCudaMemMiB).c_str(), 0);
  // StarPU's GPU index -> its CUDA workers, in worker order.
  auto open = [&](const std::vector<int>& gpus) {
    start_starpu(policy, D, profiling, who, start, stop, true, gpus);
    std::map<int, std::vector<int>> m;
    for (unsigned w = 0; w < starpu_worker_get_count(); ++w)
      if (starpu_worker_get_type(static_cast<int>(w)) == STARPU_CUDA_WORKER)
        m[starpu_worker_get_devid(static_cast<int>(w))].push_back(static_cast<int>(w));
    return m;
  };
  std::map<int, std::vector<int>> found = open({});
  std::vector<int> all, mine;
  for (const auto& [gpu, ws] : found) all.push_back(gpu);
  if (!all.empty()) mine = std::getenv("STARPU_WORKERS_CUDAID") ? all : gpus_of_share(all, share);
  const int G = static_cast<int>(mine.size()), per = G > 0 ? (D + G - 1) / G : 0;
  auto enough = [&](const std::map<int, std::vector<int>>& m) {
    for (int gpu : mine)
      if (m.count(gpu) == 0 || static_cast<int>(m.at(gpu).size()) < per) return false;
    return true;
  };
  const bool raise = !found.empty() && !enough(found);
  const char* nworker_set = std::getenv("STARPU_NWORKER_PER_CUDA");
  // What this process needs: 0 keep StarPU as started, 1 restart it on its
  // share, 2 fail. Under mpirun every rank must do the same (the stop of
  // StarPU-MPI is collective), so the ranks agree on the largest need.
  enum { kKeep = 0, kRestart = 1, kFail = 2 };
  const int need = found.empty() || (raise && nworker_set) ? kFail : raise || mine != all ? kRestart : kKeep;
  const int all_need = agree(need);
  if (all_need == kFail) {
    stop();
    if (found.empty())
      throw SpecError("--cuda: StarPU found no usable CUDA device (none here, or hidden by CUDA_VISIBLE_DEVICES or "
                      "STARPU_NCUDA)");
    if (need == kFail)
      throw SpecError(fmt::format("--cuda: {} {} on {} GPU(s) need {} CUDA workers per GPU, but "
                                  "STARPU_NWORKER_PER_CUDA={}", D, who, G, per, nworker_set));
    throw SpecError("--cuda: another rank could not start its CUDA workers (its own error names why)");
  }
  if (all_need == kRestart) {
    stop();
    if (raise) setenv("STARPU_NWORKER_PER_CUDA", std::to_string(per).c_str(), 1);
    try {
      found = open(mine);
    } catch (...) {
      if (raise) unsetenv("STARPU_NWORKER_PER_CUDA");
      throw;
    }
    if (raise) unsetenv("STARPU_NWORKER_PER_CUDA");  // the next session derives its own
    if (!enough(found)) {
      stop();
      throw SpecError(fmt::format("--cuda: {} {} need {} CUDA workers on each of {} GPU(s), but StarPU "
                                  "started fewer (STARPU_NMAXWORKERS?)", D, who, per, G));
    }
  }
  std::vector<int> workers;
  for (int d = 0; d < D; ++d) workers.push_back(found.at(mine[d / per])[d % per]);
  return workers;
#endif
}

}  // namespace rrfp
