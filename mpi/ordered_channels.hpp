// Ordered channels between ranks (`--rank-transport ordered`): the
// transfer design NCCL needs (comm/edge_order.hpp, docs/gpu.md, "Ordered
// channels"). The wire (comm/channel_wire.hpp) pairs the k-th send of a
// directed rank pair with the peer's k-th receive: MPI with one tag per
// pair on CPUs, NCCL with one communicator per pair on GPUs. A receive
// posted for the wrong message would get the wrong bytes (the bench's
// payload check fails the run). Per pair, one send and one receive in
// flight at a time, in sequence order (a stream per communicator); the
// sender announces "send k carries message X, B bytes" over MPI, and the
// receiver releases its k-th receive only when it knows that.
//
// One progress thread per run drives every pair with non-blocking calls
// and backs off when idle (two cores: a spinning thread would take one).
#pragma once

#include <memory>
#include <thread>

#include <mpi.h>

#include "comm/channel_wire.hpp"
#include "runtime/rank_transport.hpp"

namespace rrfp {

class MpiOrderedChannels final : public MessageChannels {
 public:
  // Which message a receive is posted for. Announced: the design.
  // BufferOrder: the k-th receive into the k-th buffer a receive task
  // handed over, whatever the sender announced: a wrong design, for the
  // test that proves the wire pairs calls by order as NCCL does (the
  // bytes land in the wrong message and its consumer says so).
  enum class Receive { Announced, BufferOrder };
  // `comm`: a communicator of every rank that no one else sends on with
  // our tags (a duplicate of MPI_COMM_WORLD), for the announcements; `wire`
  // moves the bytes (null: MPI on `comm`, host buffers).
  explicit MpiOrderedChannels(MPI_Comm comm, Receive receive = Receive::Announced,
                              std::unique_ptr<ChannelWire> wire = nullptr);
  ~MpiOrderedChannels() override;
  MpiOrderedChannels(const MpiOrderedChannels&) = delete;
  MpiOrderedChannels& operator=(const MpiOrderedChannels&) = delete;

  void start(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) override;
  void send(int dst, std::int64_t msg, const void* ptr, std::size_t bytes, std::function<void()> done) override;
  void receive(int src, std::int64_t msg, void* ptr, std::size_t bytes, std::function<void()> done) override;
  void finish() override;
  std::string error() const override;

  struct State;  // shared with the progress thread (mpi/ordered_channels.cpp)

 private:
  std::shared_ptr<State> st_;
  std::thread th_;
};

// The duplicate of MPI_COMM_WORLD the channels use, made on first use
// (collective: every rank's first ordered run calls it).
MPI_Comm ordered_channels_comm();

}  // namespace rrfp
