// A wire that holds the ordered channels to what the NCCL wire
// (gpu/nccl_wire.cpp) relies on, while MPI moves the bytes: connect() comes
// before every run's transfers and names each pair the run uses; at most
// one send and one receive in flight per peer; no more transfers with a
// peer than connect() announced. A breach fails the run through error(),
// so the NCCL wire's contract is tested on CPUs (mpi_check ordered-contract).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/channel_wire.hpp"

namespace rrfp {

class ContractWire final : public ChannelWire {
 public:
  explicit ContractWire(std::unique_ptr<ChannelWire> inner) : inner_(std::move(inner)) {}
  void connect(const std::vector<int>& sends_to, const std::vector<int>& receives_from) override {
    if (in_flight()) breach("connect() while a transfer of the last run is in flight");
    sends_left_ = sends_to;
    receives_left_ = receives_from;
    sending_.assign(sends_to.size(), false);
    receiving_.assign(sends_to.size(), false);
    ++connects_;
    inner_->connect(sends_to, receives_from);
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
  std::unique_ptr<ChannelWire> inner_;
  std::vector<int> sends_left_, receives_left_;
  std::vector<bool> sending_, receiving_;
  int connects_ = 0;
  std::string error_;
};

}  // namespace rrfp
