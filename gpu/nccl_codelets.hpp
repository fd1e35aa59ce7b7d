// NCCL point-to-point transfers as StarPU tasks on CUDA workers: each is a
// CUDA codelet that enqueues its NCCL call on the worker's StarPU stream
// and returns (STARPU_CUDA_ASYNC), so the task ends, and its consumer may
// start, when the GPU has moved the bytes. The order of calls between two
// ranks follows comm/edge_order.hpp (docs/gpu.md).
#pragma once

#include <nccl.h>
#include <starpu.h>

#include <cstddef>
#include <string>

namespace rrfp::gpu {

struct NcclCall {
  ncclComm_t comm = nullptr;
  int peer = 0;            // rank in `comm` of the other side
  std::string error;       // set by the codelet when NCCL refused the call
};

// One buffer (a vector handle on the worker's CUDA memory node):
// send: R, receive: W. cl_arg: NcclCall*.
starpu_codelet* nccl_send_codelet();
starpu_codelet* nccl_recv_codelet();
// Two buffers (R source, W destination): send to and receive from the
// same rank in one NCCL group; on a one-rank communicator, a transfer of a
// GPU to itself through NCCL (the one-GPU check of the NCCL path).
starpu_codelet* nccl_sendrecv_codelet();
// Two buffers (R, W): cudaMemcpyAsync device to device, for comparison.
starpu_codelet* cuda_copy_codelet();

// A one-rank communicator on the calling thread's current CUDA device.
ncclComm_t nccl_self_comm();
// "NCCL x.y.z" of the library loaded.
std::string nccl_version();

}  // namespace rrfp::gpu
