#include "gpu/nccl_wire.hpp"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
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

  // On a thread of its own: the caller's current device (torch's main
  // thread) stays as it was, and a peer that never joins is an error after
  // the set-up's budget (comm/channel_wire.hpp) instead of a hang: the
  // thread, blocked in NCCL or MPI, is then left to the process's abort.
  void connect(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) override {
    if (checked_ && connection_order(rv_.me, sends_to, receives_from, has()).empty()) return;  // every pair made
    auto job = std::make_shared<SetUp>();
    std::thread th([this, job, sends_to, receives_from] {
      try {
        check_cuda(cudaSetDevice(dev_), "cudaSetDevice");
        connect_here(sends_to, receives_from, *job);
      } catch (...) {
        job->failed = std::current_exception();
      }
      std::lock_guard<std::mutex> g(job->m);
      job->done = true;
      job->cv.notify_all();
    });
    const double budget = set_up_budget_s(timeout_s, rv_.ranks);
    std::unique_lock<std::mutex> lk(job->m);
    const bool done = budget <= 0 ? (job->cv.wait(lk, [&] { return job->done; }), true)
                                  : job->cv.wait_for(lk, std::chrono::duration<double>(budget), [&] { return job->done; });
    lk.unlock();
    if (!done) {
      th.detach();
      const int peer = job->peer.load();
      throw std::runtime_error(peer < 0 ? fmt::format("no answer from the other ranks within {} s while comparing "
                                                      "their GPUs (is every rank alive, and in the same run?)",
                                                      budget)
                                        : fmt::format("no answer from rank {} within {} s while creating their NCCL "
                                                      "communicator (is it alive, and in the same run?)",
                                                      peer, budget));
    }
    th.join();
    if (job->failed) std::rethrow_exception(job->failed);
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
  // What the set-up thread shares with connect(), which may stop waiting for it.
  struct SetUp {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr failed;
    std::atomic<int> peer{-1};  // the rank of the pair being created
  };

  void connect_here(const std::vector<int>& sends_to, const std::vector<int>& receives_from, SetUp& job) {
    if (!checked_) {
      check_distinct_gpus();
      check_cuda(cudaMalloc(&scratch_, 8), "cudaMalloc (the warm-up byte)");
      checked_ = true;
    }
    // Pairwise and blocking, in the order every rank agrees on (no cycle of waits).
    for (const auto& [src, dst] : connection_order(rv_.me, sends_to, receives_from, has())) {
      job.peer = src == rv_.me ? dst : src;
      create(src, dst);
    }
  }

  // Whether the pair src -> dst is connected (its warm-up done).
  std::function<bool(int, int)> has() const {
    return [this](int src, int dst) { return (src == rv_.me ? to_[dst] : from_[src]).comm != nullptr; };
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
  // sender, over MPI; then one byte, the pair's first call (it connects
  // NCCL's channels between the two, so later calls only enqueue).
  void create(int src, int dst) {
    const bool sender = src == rv_.me;
    ncclUniqueId id;
    if (sender) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      rv_.send(dst, &id, sizeof id);
    } else {
      rv_.receive(src, &id, sizeof id);
    }
    Direction& d = sender ? to_[dst] : from_[src];
    const std::string what = fmt::format("the NCCL communicator of rank {} -> rank {}", src, dst);
    ncclComm_t comm = nullptr;
    check_nccl(ncclCommInitRank(&comm, 2, id, sender ? 0 : 1), what.c_str());
    check_cuda(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreateWithFlags(&d.done, cudaEventDisableTiming), "cudaEventCreate");
    check_nccl(sender ? ncclSend(scratch_, 1, ncclChar, 1, comm, d.stream) : ncclRecv(scratch_, 1, ncclChar, 0, comm, d.stream),
               (what + ": the warm-up byte").c_str());
    check_cuda(cudaStreamSynchronize(d.stream), (what + ": the warm-up byte").c_str());
    d.comm = comm;  // connected: only now does has() count it
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
    const ncclResult_t r = e == cudaSuccess ? f(d) : ncclUnhandledCudaError;  // blocking: enqueued when it returns
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
