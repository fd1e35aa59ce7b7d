#include "gpu/nccl_wire.hpp"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "comm/edge_order.hpp"

namespace rrfp::gpu {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// One direction of a rank pair: its communicator and, on this side, a
// stream and the event recorded after the call in flight.
struct Direction {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
};

class NcclWire final : public ChannelWire {
  using Clock = std::chrono::steady_clock;

 public:
  NcclWire(int dev, WireRendezvous rv) : dev_(dev), rv_(std::move(rv)), to_(rv_.ranks), from_(rv_.ranks) {}
  ~NcclWire() override {
    for (auto* side : {&to_, &from_})
      for (Direction& d : *side) {
        if (d.comm) ncclCommDestroy(d.comm);
        if (d.done) cudaEventDestroy(d.done);
        if (d.stream) cudaStreamDestroy(d.stream);
      }
    if (scratch_) cudaFree(scratch_);
  }
  NcclWire(const NcclWire&) = delete;
  NcclWire& operator=(const NcclWire&) = delete;

  // On a thread of its own, so that the caller's current device (torch's
  // main thread) stays as it was.
  void connect(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) override {
    timeout_s_ = timeout_s;
    std::exception_ptr failed;
    std::thread([&] {
      try {
        check_cuda(cudaSetDevice(dev_), "cudaSetDevice");
        connect_here(sends_to, receives_from);
      } catch (...) {
        failed = std::current_exception();
      }
    }).join();
    if (failed) std::rethrow_exception(failed);
  }

  void start_send(int peer, const void* ptr, std::size_t bytes) override {
    call(to_.at(peer), [&](Direction& d) { return ncclSend(ptr, bytes, ncclChar, 1, d.comm, d.stream); }, "ncclSend", peer);
  }
  void start_receive(int peer, void* ptr, std::size_t bytes) override {
    call(from_.at(peer), [&](Direction& d) { return ncclRecv(ptr, bytes, ncclChar, 0, d.comm, d.stream); }, "ncclRecv",
         peer);
  }
  bool sent(int peer) override { return complete(to_.at(peer), "send to", peer); }
  bool received(int peer) override { return complete(from_.at(peer), "receive from", peer); }

  std::string error() override {
    for (auto* side : {&to_, &from_})
      for (int r = 0; r < static_cast<int>(side->size()) && error_.empty(); ++r) {
        ncclResult_t async = ncclSuccess;
        if ((*side)[r].comm && ncclCommGetAsyncError((*side)[r].comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress)
          error_ = fmt::format("rank {}: NCCL {} rank {}: {}", rv_.me, side == &to_ ? "to" : "from", r,
                               ncclGetErrorString(async));
      }
    return error_;
  }
  std::size_t max_bytes() const override { return std::numeric_limits<std::size_t>::max(); }
  bool needs_polling() const override { return false; }  // the GPU moves the bytes
  const char* name() const override { return "NCCL"; }

 private:
  void connect_here(const std::vector<int>& sends_to, const std::vector<int>& receives_from) {
    if (!checked_) {
      check_distinct_gpus();
      check_cuda(cudaMalloc(&scratch_, 8), "cudaMalloc (the warm-up byte)");
      checked_ = true;
    }
    // Pairwise and blocking, in the order every rank agrees on (no cycle of waits).
    auto has = [&](int src, int dst) { return (src == rv_.me ? to_[dst] : from_[src]).comm != nullptr; };
    for (const auto& [src, dst] : connection_order(rv_.me, sends_to, receives_from, has)) create(src, dst);
  }

  // Host name and PCI bus id of every rank's GPU: two ranks on one GPU
  // would make NCCL fail (or hang) at the first communicator between them.
  void check_distinct_gpus() {
    std::array<char, 256> mine{};
    char host[128] = {}, bus[32] = {};
    gethostname(host, sizeof host - 1);
    check_cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, dev_), "cudaDeviceGetPCIBusId");
    fmt::format_to_n(mine.data(), mine.size() - 1, "{} GPU {}", host, bus);
    const std::vector<char> all = rv_.all_gather(mine.data(), mine.size());
    for (int a = 0; a < rv_.ranks; ++a)
      for (int b = a + 1; b < rv_.ranks; ++b)
        if (std::strncmp(&all[a * mine.size()], &all[b * mine.size()], mine.size()) == 0)
          throw std::runtime_error(fmt::format(
              "ranks {} and {} both run on {}; NCCL puts a GPU in a communicator once: give each rank a GPU of its "
              "own (one rank per GPU, CUDA_VISIBLE_DEVICES or srun --gpus-per-task) or use --rank-transport "
              "starpu-mpi",
              a, b, &all[a * mine.size()]));
  }

  // The communicator of src -> dst (src its rank 0): the id from the
  // sender, over MPI; then one byte, the pair's first call. Non-blocking
  // (ncclConfig_t::blocking = 0), so a peer that never joins is an error
  // after the run's timeout, not a hang: NCCL's calls on it may return
  // ncclInProgress, and settle() waits for them.
  void create(int src, int dst) {
    const bool sender = src == rv_.me;
    const int peer = sender ? dst : src;
    ncclUniqueId id;
    if (sender) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      rv_.send(dst, &id, sizeof id);
    } else {
      rv_.receive(src, &id, sizeof id, timeout_s_);
    }
    Direction& d = sender ? to_[dst] : from_[src];
    const Clock::time_point deadline = deadline_from_now();
    const std::string what = fmt::format("the NCCL communicator of rank {} -> rank {}", src, dst);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check_nccl(settle(d, ncclCommInitRankConfig(&d.comm, 2, id, sender ? 0 : 1, &config), deadline, peer),
               what.c_str());
    check_cuda(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreateWithFlags(&d.done, cudaEventDisableTiming), "cudaEventCreate");
    const ncclResult_t r = sender ? ncclSend(scratch_, 1, ncclChar, 1, d.comm, d.stream)
                                  : ncclRecv(scratch_, 1, ncclChar, 0, d.comm, d.stream);
    check_nccl(settle(d, r, deadline, peer), (what + ": the warm-up byte").c_str());
    check_cuda(cudaEventRecord(d.done, d.stream), "cudaEventRecord");
    for (cudaError_t e; (e = cudaEventQuery(d.done)) != cudaSuccess;) {
      if (e != cudaErrorNotReady) check_cuda(e, (what + ": the warm-up byte").c_str());
      if (Clock::now() > deadline) no_answer(d, peer);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  Clock::time_point deadline_from_now() const {  // no limit: in 30 years
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                              timeout_s_ > 0 ? timeout_s_ : 1e9));
  }

  // The outcome of a call on a non-blocking communicator: ncclInProgress
  // until NCCL has done it (a peer's part included).
  ncclResult_t settle(Direction& d, ncclResult_t r, Clock::time_point deadline, int peer) {
    while (r == ncclInProgress) {
      if (Clock::now() > deadline) no_answer(d, peer);
      std::this_thread::yield();
      if (ncclCommGetAsyncError(d.comm, &r) != ncclSuccess) break;
    }
    return r;
  }
  [[noreturn]] void no_answer(Direction& d, int peer) {
    ncclCommAbort(d.comm);
    d.comm = nullptr;
    throw std::runtime_error(fmt::format("no answer from rank {} within {} s while creating their NCCL communicator "
                                         "(is it alive, and in the same run?)",
                                         peer, timeout_s_));
  }

  // On the channels' progress thread: a failure ends the run through error().
  template <typename F>
  void call(Direction& d, F&& f, const char* what, int peer) {
    if (!error_.empty()) return;
    if (!d.comm) {
      error_ = fmt::format("rank {}: {} with rank {}: no communicator (connect() was not told of it)", rv_.me, what, peer);
      return;
    }
    cudaError_t e = cudaSetDevice(dev_);
    ncclResult_t r = e == cudaSuccess ? f(d) : ncclUnhandledCudaError;
    // Enqueueing on a connected pair takes NCCL no peer: bounded all the same.
    const Clock::time_point deadline = deadline_from_now();
    while (r == ncclInProgress && Clock::now() < deadline && ncclCommGetAsyncError(d.comm, &r) == ncclSuccess)
      std::this_thread::yield();
    if (r == ncclSuccess) e = cudaEventRecord(d.done, d.stream);
    if (r != ncclSuccess || e != cudaSuccess)
      error_ = fmt::format("rank {}: {} with rank {}: {}", rv_.me, what, peer,
                           r != ncclSuccess ? ncclGetErrorString(r) : cudaGetErrorString(e));
  }
  bool complete(Direction& d, const char* what, int peer) {
    if (!error_.empty() || !d.done) return false;
    const cudaError_t e = cudaEventQuery(d.done);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady)
      error_ = fmt::format("rank {}: the {} rank {}: {}", rv_.me, what, peer, cudaGetErrorString(e));
    return false;
  }

  int dev_;
  double timeout_s_ = 0;  // connect()'s: the run's stall timeout
  WireRendezvous rv_;
  std::vector<Direction> to_, from_;  // per peer rank
  void* scratch_ = nullptr;
  bool checked_ = false;
  std::string error_;
};

}  // namespace

std::unique_ptr<ChannelWire> nccl_wire(int cuda_device, WireRendezvous rendezvous) {
  return std::make_unique<NcclWire>(cuda_device, std::move(rendezvous));
}

}  // namespace rrfp::gpu
