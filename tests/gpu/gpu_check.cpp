// GPU checks (CTest label gpu; SKIPPED, exit 77, where no CUDA device is
// usable, as on the CI machine). With a GPU: the NCCL path moves the right
// bytes through a one-rank communicator (a GPU sending to itself, the one
// NCCL transfer one GPU can make), as an asynchronous StarPU task on a
// CUDA worker, and its bandwidth next to cudaMemcpyAsync.
#include <cuda_runtime.h>
#include <starpu.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "gpu/cuda_devices.hpp"
#include "gpu/nccl_codelets.hpp"

using namespace rrfp::gpu;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "gpu_check: FAILED: %s\n", what.c_str());
  }
}

// Submits `reps` tasks of `cl` (R src, W dst) and returns GB/s of one direction.
double bandwidth(starpu_codelet* cl, NcclCall* call, starpu_data_handle_t src, starpu_data_handle_t dst,
                 std::size_t bytes, int reps) {
  const double t0 = starpu_timing_now();
  for (int r = 0; r < reps; ++r)
    if (starpu_task_insert(cl, STARPU_R, src, STARPU_W, dst, STARPU_CL_ARGS_NFREE, call, sizeof(call), 0) != 0)
      expect(false, "starpu_task_insert");
  starpu_task_wait_for_all();
  const double us = starpu_timing_now() - t0;
  return static_cast<double>(bytes) * reps / (us * 1e3);
}

}  // namespace

int main() {
  if (cuda_device_count() == 0) {
    std::printf("gpu_check: no CUDA device (%s): skipped\n", no_device_reason().c_str());
    return 77;
  }
  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 1;
  conf.ncuda = 1;
  conf.sched_policy_name = "eager";
  if (starpu_init(&conf) != 0 || starpu_cuda_worker_get_count() < 1) {
    std::fprintf(stderr, "gpu_check: StarPU did not start a CUDA worker (is it built with CUDA?)\n");
    return 1;
  }
  cudaSetDevice(0);  // after starpu_init: StarPU's bus calibration resets devices
  ncclComm_t comm = nccl_self_comm();
  NcclCall call{comm, 0, {}};
  std::printf("gpu_check: %s, one-rank communicator on CUDA device 0\n", nccl_version().c_str());
  std::printf("%10s  %14s  %14s  %6s\n", "bytes", "NCCL GB/s", "memcpy GB/s", "ratio");
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{64} << 20, std::size_t{512} << 20}) {
    std::vector<unsigned char> a(bytes), b(bytes, 0);
    for (std::size_t i = 0; i < bytes; ++i) a[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    starpu_data_handle_t src, dst;
    starpu_vector_data_register(&src, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(a.data()), bytes, 1);
    starpu_vector_data_register(&dst, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(b.data()), bytes, 1);
    // Correctness: one transfer, then the bytes back in RAM.
    bandwidth(nccl_sendrecv_codelet(), &call, src, dst, bytes, 1);
    expect(call.error.empty(), "NCCL: " + call.error);
    starpu_data_acquire(dst, STARPU_R);
    expect(std::memcmp(a.data(), b.data(), bytes) == 0, fmt::format("NCCL self-transfer of {} bytes corrupted", bytes));
    starpu_data_release(dst);
    // Bandwidth on data resident on the GPU, interleaved, best of 3.
    double nccl = 0, copy = 0;
    for (int round = 0; round < 3; ++round) {
      nccl = std::max(nccl, bandwidth(nccl_sendrecv_codelet(), &call, src, dst, bytes, 20));
      copy = std::max(copy, bandwidth(cuda_copy_codelet(), &call, src, dst, bytes, 20));
    }
    std::printf("%10zu  %14.1f  %14.1f  %6.2f\n", bytes, nccl, copy, nccl / copy);
    starpu_data_unregister(src);
    starpu_data_unregister(dst);
  }
  ncclCommDestroy(comm);
  starpu_shutdown();
  if (failures) return 1;
  std::printf("gpu_check: OK\n");
  return 0;
}
