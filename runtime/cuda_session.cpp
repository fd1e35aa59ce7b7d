// StarPU with devices as CUDA workers (ExecOptions::cuda, docs/gpu.md):
// which GPUs a process takes, and how its devices map onto their workers.
// Shared by the one-process session and StarPU-MPI's (one per rank).
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"
#include "runtime/session.hpp"

namespace rrfp {

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
                                   GpuShare share) {
#ifndef STARPU_USE_CUDA
  (void)policy, (void)devices, (void)profiling, (void)who, (void)start, (void)stop, (void)share;
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
  if (found.empty()) {
    stop();
    throw SpecError("--cuda: StarPU found no usable CUDA device (none here, or hidden by CUDA_VISIBLE_DEVICES or STARPU_NCUDA)");
  }
  std::vector<int> all;
  for (const auto& [gpu, ws] : found) all.push_back(gpu);
  const std::vector<int> mine = std::getenv("STARPU_WORKERS_CUDAID") ? all : gpus_of_share(all, share);
  const int G = static_cast<int>(mine.size()), per = (D + G - 1) / G;
  auto enough = [&](const std::map<int, std::vector<int>>& m) {
    for (int gpu : mine)
      if (m.count(gpu) == 0 || static_cast<int>(m.at(gpu).size()) < per) return false;
    return true;
  };
  const bool raise = !enough(found);
  if (raise || mine != all) {
    stop();
    if (raise)
      if (const char* set = std::getenv("STARPU_NWORKER_PER_CUDA"))
        throw SpecError(fmt::format("--cuda: {} {} on {} GPU(s) need {} CUDA workers per GPU, but "
                                    "STARPU_NWORKER_PER_CUDA={}", D, who, G, per, set));
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
