// One StarPU instance at a time, initialised with a chosen policy and shut
// down when the session ends. Tests and benches switch policies by ending one
// session and starting another.
#pragma once

#include <functional>
#include <vector>

#include <starpu.h>

#include "sched/policy_registry.hpp"

namespace rrfp {

// This StarPU has at most this many CPU workers (STARPU_MAXCPUS).
int max_cpu_workers();

// What StarpuSession and the StarPU-MPI session share: starts StarPU
// through `start` (starpu_init, starpu_mpi_init_conf) with `ncpus` CPU
// workers, no accelerators and `policy`, with STARPU_SCHED hidden (StarPU
// would let it beat the configuration and warn about our names; we
// resolved it already); checks that StarPU started that many workers
// (else `stop`s it) and turns profiling on if asked. `who` names the
// request in errors ("devices", "devices per rank"). Throws SpecError.
// cuda: no CPU workers, and the GPUs `cuda_gpus` names (CUDA device ids),
// or every GPU StarPU finds when it is empty (start_starpu_cuda maps the
// `ncpus` devices onto the CUDA workers and checks their count).
void start_starpu(const PolicyChoice& policy, int ncpus, bool profiling, const char* who,
                  const std::function<int(starpu_conf*)>& start, const std::function<void()>& stop,
                  bool cuda = false, const std::vector<int>& cuda_gpus = {});

// Which of the GPUs StarPU finds a process takes: share `index` of `of`
// equal, contiguous shares (under mpirun: the rank's index among the ranks
// of its node), or GPU `index` mod count when there are fewer GPUs than
// shares. One share takes every GPU. STARPU_WORKERS_CUDAID, when set, wins.
struct GpuShare {
  int index = 0, of = 1;
};
// The GPUs of `share` among `found` (CUDA device ids, ascending).
std::vector<int> gpus_of_share(const std::vector<int>& found, GpuShare share);

// The cores a rank can count on: those of its affinity mask (mpirun binds
// ranks), and no more than its node's cores split among the node's ranks.
int cores_of_rank(int affinity_cores, int node_cores, int ranks_of_node);

// STARPU_MPI_POLL_BACKOFF_MAX_US for a rank with `workers` StarPU workers
// (each a busy thread, CPU or CUDA) on `cores` cores: 0, StarPU-MPI's own
// polling without a pause, when a core is left for its progress thread;
// else the longest pause between its polls for an envelope, in microseconds
// (our StarPU patch, docs/mpi.md "StarPU-MPI's progress thread").
int mpi_poll_backoff_us(int cores, int workers);

// Starts StarPU through `start` with `devices` devices as CUDA workers and
// no CPU worker, on this process's share of the GPUs: contiguous blocks of
// ceil(devices / GPUs) devices per GPU, each device a worker with its own
// stream. StarPU is restarted on the share's GPUs alone, with
// STARPU_NWORKER_PER_CUDA raised when a GPU has fewer workers than its block
// (unless the user set it). Returns each device's StarPU worker. Throws
// SpecError (naming --cuda) without a usable GPU. Under mpirun `agree`
// returns the largest of every rank's value (an all-reduce): whether to
// restart StarPU, or to fail, is then one decision for all ranks, whose
// stop of StarPU-MPI is collective.
std::vector<int> start_starpu_cuda(const PolicyChoice& policy, int devices, bool profiling, const char* who,
                                   const std::function<int(starpu_conf*)>& start, const std::function<void()>& stop,
                                   GpuShare share = {}, const std::function<int(int)>& agree = [](int v) { return v; });

// StarPU's default share of each GPU's memory in a CUDA session, MiB
// (STARPU_LIMIT_CUDA_MEM, unless set): message handles only.
inline constexpr int kStarpuCudaMemMiB = 4096;

class StarpuSession {
 public:
  // `ncpus` CPU workers, no accelerators. Throws SpecError when StarPU
  // cannot start that many workers or a session is already open.
  // cuda (ExecOptions::cuda): `ncpus` devices as CUDA workers instead, in
  // contiguous blocks of ceil(devices / GPUs) per GPU, each a worker with
  // its own stream; StarPU is restarted with STARPU_NWORKER_PER_CUDA raised
  // when a GPU has fewer workers than its block (unless the user set it).
  StarpuSession(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda = false);
  ~StarpuSession();
  StarpuSession(const StarpuSession&) = delete;
  StarpuSession& operator=(const StarpuSession&) = delete;

  // Starting StarPU costs tens of milliseconds and a training run executes
  // one graph per step, so execute() keeps one session open while the
  // policy, the worker count and profiling stay the same. A different
  // request (or close_reused()) shuts the kept one down first; so does
  // constructing a StarpuSession directly. Closed at exit.
  static StarpuSession& reuse(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda = false);
  static void close_reused();
  // A run left tasks stuck in StarPU: the kept session is given up without
  // shutting StarPU down (that would wait for them forever); no new session
  // can open in this process, which is about to end.
  static void abandon();

  const PolicyChoice& policy() const { return policy_; }
  // Runs `init` once on every worker of this session, the first time it
  // is called (later calls do nothing): thread-local set-up (a BLAS's
  // buffers, an allocator's caches, thread counts) that would otherwise land
  // in the first task each worker runs.
  void init_workers_once(const std::function<void()>& init);
  // StarPU worker id of the worker (CPU, or CUDA) that plays device d.
  int worker_of_device(int d) const;
  bool cuda() const { return cuda_; }

 private:
  PolicyChoice policy_;
  int ncpus_;
  bool profiling_;
  bool cuda_;
  std::vector<int> cuda_workers_;  // per device
  bool workers_initialised_ = false;
};

}  // namespace rrfp
