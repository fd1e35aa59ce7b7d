// A wire that holds the ordered channels to what the NCCL wire
// (gpu/nccl_wire.cpp) relies on, while MPI moves the bytes: connect() comes
// before every run's transfers and names each pair the run uses; at most
// one send and one receive in flight per peer; no more transfers with a
// peer than connect() announced. A breach fails the run through error(),
// so the NCCL wire's contract is tested on CPUs (mpi_check ordered-contract).
// connect() also creates its "communicators" as NCCL's wire does: pairwise,
// in connection_order(), each a synchronous MPI handshake that blocks both
// ranks until both arrive (as ncclCommInitRank does), naming the pair, so
// ranks that disagree on the order wait forever (the test times out) and
// ranks that disagree on the pair fail. A peer that does not answer within
// the timeout is an error naming it, as with NCCL's wire; `absent` makes
// this rank such a peer (it never connects).
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>

#include "comm/channel_wire.hpp"
#include "comm/edge_order.hpp"

namespace rrfp {

class ContractWire final : public ChannelWire {
 public:
  ContractWire(std::unique_ptr<ChannelWire> inner, MPI_Comm comm, bool absent = false)
      : inner_(std::move(inner)), comm_(comm), absent_(absent) {
    MPI_Comm_rank(comm, &me_);
    int size = 1;
    MPI_Comm_size(comm, &size);
    connected_.assign(static_cast<size_t>(size) * size, false);
  }
  void connect(const std::vector<int>& sends_to, const std::vector<int>& receives_from, double timeout_s) override {
    if (absent_) std::this_thread::sleep_for(std::chrono::minutes(10));  // until the others abort the job
    if (in_flight()) breach("connect() while a transfer of the last run is in flight");
    const int R = static_cast<int>(sends_to.size());
    const double budget = set_up_budget_s(timeout_s, R);  // as NCCL's wire: the whole set-up
    const auto t0 = std::chrono::steady_clock::now();
    auto has = [&](int src, int dst) { return bool(connected_[static_cast<size_t>(src) * R + dst]); };
    for (const auto& [src, dst] : connection_order(me_, sends_to, receives_from, has)) {
      int pair[2] = {src, dst};
      MPI_Request r;
      if (src == me_) MPI_Issend(pair, 2, MPI_INT, dst, kHandshakeTag, comm_, &r);
      else MPI_Irecv(pair, 2, MPI_INT, src, kHandshakeTag, comm_, &r);
      for (int done = 0; MPI_Test(&r, &done, MPI_STATUS_IGNORE), !done;) {
        if (budget > 0 && std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(budget))
          throw std::runtime_error(fmt::format("no answer from rank {} within {} s while creating the pair {} -> {}",
                                               src == me_ ? dst : src, budget, src, dst));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (src != me_) {
        if (pair[0] != src || pair[1] != dst)
          breach(fmt::format("rank {} created pair {} -> {} while this rank created {} -> {}", src, pair[0], pair[1], src, dst));
      }
      connected_[static_cast<size_t>(src) * R + dst] = true;
    }
    sends_left_ = sends_to;
    receives_left_ = receives_from;
    sending_.assign(sends_to.size(), false);
    receiving_.assign(sends_to.size(), false);
    ++connects_;
    inner_->connect(sends_to, receives_from, timeout_s);
  }
  void start_send(int peer, const void* ptr, std::size_t bytes) override {
    if (connects_ == 0 || sends_left_.at(peer) <= 0) breach(fmt::format("a send to rank {} connect() did not announce", peer));
    if (sending_.at(peer)) breach(fmt::format("two sends in flight to rank {}", peer));
    --sends_left_[peer];
    sending_[peer] = true;
    inner_->start_send(peer, ptr, bytes);
  }
  void start_receive(int peer, void* ptr, std::size_t bytes) override {
    if (connects_ == 0 || receives_left_.at(peer) <= 0)
      breach(fmt::format("a receive from rank {} connect() did not announce", peer));
    if (receiving_.at(peer)) breach(fmt::format("two receives in flight from rank {}", peer));
    --receives_left_[peer];
    receiving_[peer] = true;
    inner_->start_receive(peer, ptr, bytes);
  }
  bool sent(int peer) override {
    const bool done = inner_->sent(peer);
    if (done) sending_.at(peer) = false;
    return done;
  }
  bool received(int peer) override {
    const bool done = inner_->received(peer);
    if (done) receiving_.at(peer) = false;
    return done;
  }
  std::string error() override { return error_.empty() ? inner_->error() : error_; }
  std::size_t max_bytes() const override { return inner_->max_bytes(); }
  bool needs_polling() const override { return inner_->needs_polling(); }
  const char* name() const override { return "MPI (NCCL's contract checked)"; }

 private:
  bool in_flight() const {
    for (size_t r = 0; r < sending_.size(); ++r)
      if (sending_[r] || receiving_[r]) return true;
    return false;
  }
  void breach(const std::string& what) {
    if (error_.empty()) error_ = "wire contract broken: " + what;
  }
  static constexpr int kHandshakeTag = 7104;  // the channels use 7101-7103
  std::unique_ptr<ChannelWire> inner_;
  MPI_Comm comm_;
  bool absent_ = false;
  int me_ = 0;
  std::vector<bool> connected_;  // src * ranks + dst
  std::vector<int> sends_left_, receives_left_;
  std::vector<bool> sending_, receiving_;
  int connects_ = 0;
  std::string error_;
};

}  // namespace rrfp
