// What carries the bytes of ordered channels between ranks
// (mpi/ordered_channels.hpp): MPI between host buffers on CPUs
// (mpi/mpi_channel_wire.cpp), NCCL between device buffers on GPUs
// (gpu/nccl_wire.cpp). The channels decide which message goes next on each
// directed rank pair (comm/edge_order.hpp) and announce it over MPI; the
// wire only moves it. Pure C++, so the channels' logic does not depend on
// which wire a build has.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace rrfp {

class ChannelWire {
 public:
  virtual ~ChannelWire() = default;
  // Before a run's first transfer, on the caller's thread, on every rank of
  // the run: ready to send to each rank r with sends_to[r] > 0 and to
  // receive from each r with receives_from[r] > 0 (NCCL: communicators
  // created on first need, pairwise, in an order every rank agrees on).
  // A peer that does not answer within set_up_budget_s(timeout_s, ranks)
  // is an error. Throws std::runtime_error naming the problem.
  virtual void connect(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) = 0;
  // At most one send and one receive in flight per peer; the channels'
  // progress thread is the only caller of what follows.
  virtual void start_send(int peer, const void* ptr, std::size_t bytes) = 0;
  virtual void start_receive(int peer, void* ptr, std::size_t bytes) = 0;
  // Whether the transfer in flight to / from `peer` is complete (false
  // also after a failure: error() then says why).
  virtual bool sent(int peer) = 0;
  virtual bool received(int peer) = 0;
  // "" or why the wire failed (an NCCL asynchronous error, a CUDA error).
  virtual std::string error() = 0;
  // The largest message one call moves (MPI counts are ints).
  virtual std::size_t max_bytes() const = 0;
  // Whether a transfer in flight moves only while someone calls the wire
  // (MPI's progress): the channels' thread then polls it without pausing.
  virtual bool needs_polling() const = 0;
  // "MPI" or "NCCL": for messages.
  virtual const char* name() const = 0;
};

// How long a rank's wire set-up may wait for its peers: creating pairs in
// connection_order() (comm/edge_order.hpp), a rank may first wait for its
// neighbours to create their earlier pairs, a chain of at most 2 (R - 1)
// creations, each allowed the run's stall timeout. 0: no limit.
inline double set_up_budget_s(double timeout_s, int ranks) {
  return timeout_s > 0 ? timeout_s * 2 * (ranks > 1 ? ranks - 1 : 1) : 0;
}

// What ranks exchange before a wire's connections exist (NCCL's unique
// ids): MPI, supplied by mpi/ to wires that do not link it. Blocking;
// `all_gather` is collective.
struct WireRendezvous {
  int me = 0, ranks = 1;
  std::function<void(int dst, const void* data, std::size_t bytes)> send;
  std::function<void(int src, void* data, std::size_t bytes)> receive;
  // Every rank's `bytes` bytes, in rank order.
  std::function<std::vector<char>(const void* mine, std::size_t bytes)> all_gather;
};

}  // namespace rrfp
