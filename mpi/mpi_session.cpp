#include "mpi/mpi_session.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <mpi.h>
#include <starpu_mpi.h>

#include "codelets/splitmix.hpp"
#include "graph/pipeline_spec.hpp"
#include "mpi/mpi_comm.hpp"
#include "runtime/executor.hpp"
#include "runtime/session.hpp"

namespace rrfp {

namespace {

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

MPI_Comm g_comm = MPI_COMM_NULL;
MPI_Comm g_mirror_comm = MPI_COMM_NULL;  // rrfp_mirror_comm()

std::unique_ptr<MpiStarpuSession>& kept() {
  static std::unique_ptr<MpiStarpuSession> s;
  return s;
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MpiStarpuSession::close_reused();  // StarPU-MPI needs MPI to shut down
  MPI_Finalize();
}

}  // namespace

MpiWorld mpi_world() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE)
      throw UnrecoverableError("this MPI does not provide MPI_THREAD_MULTIPLE, which rrfp needs to keep StarPU-MPI "
                               "open between runs");
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &g_mirror_comm);
    kept();  // constructed now, so destroyed after finalize_at_exit has closed it
    std::atexit(finalize_at_exit);
  }
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

MPI_Comm rrfp_mpi_comm() {
  mpi_world();
  return g_comm;
}

MPI_Comm rrfp_mirror_comm() {
  mpi_world();
  return g_mirror_comm;
}

void mpi_broadcast(void* data, int bytes, int root) { MPI_Bcast(data, bytes, MPI_BYTE, root, rrfp_mpi_comm()); }

void mpi_max_in_place(double* data, int n) { MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_MAX, rrfp_mpi_comm()); }

bool mpi_all_equal(const std::string& text) {
  // max(v) == ~max(~v) == min(v) exactly when every rank has v.
  const std::uint64_t value = fnv1a64(text.data(), text.size());
  std::uint64_t v[2] = {value, ~value};
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MAX, rrfp_mpi_comm());
  return v[0] == ~v[1];
}

void mpi_sum_in_place(float* data, int n) { MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, rrfp_mpi_comm()); }

void mpi_sum_in_place(double* data, int n) { MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_SUM, rrfp_mpi_comm()); }

int mpi_message_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw SpecError(fmt::format("an MPI message of {} bytes is over MPI's int count", bytes));
  return static_cast<int>(bytes);
}

void mpi_send(const void* data, std::size_t bytes, int dest, int tag) {
  MPI_Send(data, mpi_message_count(bytes), MPI_BYTE, dest, tag, rrfp_mpi_comm());
}

void mpi_recv(void* data, std::size_t bytes, int source, int tag) {
  MPI_Recv(data, mpi_message_count(bytes), MPI_BYTE, source, tag, rrfp_mpi_comm(), MPI_STATUS_IGNORE);
}

GpuShare node_share() {
  static const GpuShare share = [] {
    mpi_world();
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(rrfp_mpi_comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    GpuShare s;
    MPI_Comm_rank(node, &s.index);
    MPI_Comm_size(node, &s.of);
    // CUDA_VISIBLE_DEVICES set differently per rank (srun --gpus-per-task)
    // already gave each rank its own GPUs: it takes all it sees.
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const long h = visible ? static_cast<long>(std::hash<std::string>{}(visible) >> 1) : -1;
    long lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG, MPI_MIN, node);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG, MPI_MAX, node);
    if (lo != hi && lo >= 0) s = GpuShare{};
    MPI_Comm_free(&node);
    return s;
  }();
  return share;
}

MpiStarpuSession& MpiStarpuSession::reuse(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda) {
  mpi_world();
  auto& k = kept();
  if (k && k->policy_.name == policy.name && k->policy_.policy == policy.policy && k->ncpus_ == ncpus &&
      k->profiling_ == profiling && k->cuda_ == cuda)
    return *k;
  k.reset();
  StarpuSession::close_reused();  // one StarPU per process
  k = std::make_unique<MpiStarpuSession>(policy, ncpus, profiling, cuda);
  return *k;
}

void MpiStarpuSession::close_reused() { kept().reset(); }

void MpiStarpuSession::abandon() { (void)kept().release(); }

bool rank_has_spare_core(int workers) {
  const GpuShare node = node_share();
  return cores_of_rank(affinity_cores(), static_cast<int>(std::thread::hardware_concurrency()), node.of) > workers + 1;
}

MpiStarpuSession::MpiStarpuSession(const PolicyChoice& policy, int ncpus, bool profiling, bool cuda)
    : policy_(policy), ncpus_(ncpus), profiling_(profiling), cuda_(cuda) {
  mpi_world();
  const GpuShare node = node_share();  // collective: before StarPU-MPI's thread runs
  // StarPU-MPI's progress thread otherwise polls without a pause while a
  // receive waits for its envelope, nearly always in a pipeline; without a
  // core of its own it takes one from the workers. Our StarPU patch pauses
  // it (docs/mpi.md); a user's setting wins.
  const int cores = cores_of_rank(affinity_cores(), static_cast<int>(std::thread::hardware_concurrency()), node.of);
  setenv("STARPU_MPI_POLL_BACKOFF_MAX_US", std::to_string(mpi_poll_backoff_us(cores, ncpus)).c_str(), 0);
  auto start = [](starpu_conf* c) {
    return starpu_mpi_init_conf(nullptr, nullptr, /*initialize_mpi=*/0, MPI_COMM_WORLD, c);
  };
  auto stop = [] { starpu_mpi_shutdown(); };
  if (cuda)
    cuda_workers_ = start_starpu_cuda(policy, ncpus, profiling, "devices per rank", start, stop, node, [](int v) {
      MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, rrfp_mpi_comm());
      return v;
    });
  else
    start_starpu(policy, ncpus, profiling, "devices per rank", start, stop);
}

MpiStarpuSession::~MpiStarpuSession() { starpu_mpi_shutdown(); }

int MpiStarpuSession::worker_of_local(int i) const {
  return cuda_ ? cuda_workers_.at(i) : starpu_worker_get_by_type(STARPU_CPU_WORKER, i);
}

}  // namespace rrfp
