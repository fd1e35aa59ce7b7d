#include "gpu/nccl_codelets.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

#include <fmt/format.h>

namespace rrfp::gpu {

namespace {

std::size_t bytes_of(void* buffer) { return STARPU_VECTOR_GET_NX(buffer) * STARPU_VECTOR_GET_ELEMSIZE(buffer); }

void* ptr_of(void* buffer) { return reinterpret_cast<void*>(STARPU_VECTOR_GET_PTR(buffer)); }

void check(NcclCall* c, ncclResult_t r, const char* what) {
  if (r != ncclSuccess && c->error.empty()) c->error = fmt::format("{}: {}", what, ncclGetErrorString(r));
}

// One ncclSend (Send) or ncclRecv on the worker's stream.
template <bool Send>
void p2p_cuda(void** buffers, void* arg) {
  auto* c = static_cast<NcclCall*>(arg);
  void* p = ptr_of(buffers[0]);
  const std::size_t n = bytes_of(buffers[0]);
  cudaStream_t s = starpu_cuda_get_local_stream();
  if constexpr (Send) check(c, ncclSend(p, n, ncclChar, c->peer, c->comm, s), "ncclSend");
  else check(c, ncclRecv(p, n, ncclChar, c->peer, c->comm, s), "ncclRecv");
}

void sendrecv_cuda(void** buffers, void* arg) {
  auto* c = static_cast<NcclCall*>(arg);
  cudaStream_t s = starpu_cuda_get_local_stream();
  check(c, ncclGroupStart(), "ncclGroupStart");
  check(c, ncclSend(ptr_of(buffers[0]), bytes_of(buffers[0]), ncclChar, c->peer, c->comm, s), "ncclSend");
  check(c, ncclRecv(ptr_of(buffers[1]), bytes_of(buffers[1]), ncclChar, c->peer, c->comm, s), "ncclRecv");
  check(c, ncclGroupEnd(), "ncclGroupEnd");
}

void copy_cuda(void** buffers, void*) {
  cudaMemcpyAsync(ptr_of(buffers[1]), ptr_of(buffers[0]), bytes_of(buffers[0]), cudaMemcpyDeviceToDevice,
                  starpu_cuda_get_local_stream());
}

starpu_codelet make(const char* name, starpu_cuda_func_t f, int nbuffers, starpu_data_access_mode m0,
                    starpu_data_access_mode m1) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.name = name;
  cl.where = STARPU_CUDA;
  cl.cuda_funcs[0] = f;
  cl.cuda_flags[0] = STARPU_CUDA_ASYNC;
  cl.nbuffers = nbuffers;
  cl.modes[0] = m0;
  cl.modes[1] = m1;
  return cl;
}

}  // namespace

starpu_codelet* nccl_send_codelet() {
  static starpu_codelet cl = make("rrfp_nccl_send", p2p_cuda<true>, 1, STARPU_R, STARPU_NONE);
  return &cl;
}
starpu_codelet* nccl_recv_codelet() {
  static starpu_codelet cl = make("rrfp_nccl_recv", p2p_cuda<false>, 1, STARPU_W, STARPU_NONE);
  return &cl;
}
starpu_codelet* nccl_sendrecv_codelet() {
  static starpu_codelet cl = make("rrfp_nccl_sendrecv", sendrecv_cuda, 2, STARPU_R, STARPU_W);
  return &cl;
}
starpu_codelet* cuda_copy_codelet() {
  static starpu_codelet cl = make("rrfp_cuda_copy", copy_cuda, 2, STARPU_R, STARPU_W);
  return &cl;
}

ncclComm_t nccl_self_comm() {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
    throw std::runtime_error(fmt::format("ncclGetUniqueId: {}", ncclGetErrorString(r)));
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0); r != ncclSuccess)
    throw std::runtime_error(fmt::format("ncclCommInitRank (one rank): {}", ncclGetErrorString(r)));
  return comm;
}

std::string nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("NCCL {}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace rrfp::gpu
