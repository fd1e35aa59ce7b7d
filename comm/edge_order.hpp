// The order of NCCL point-to-point calls between ranks, when readiness-first
// arbitration decides at run time in which order messages are produced and
// consumed (docs/gpu.md, "Why NCCL transfers can neither mismatch nor
// deadlock"). Pure C++: the GPU executor drives it, and the CPU tests drive
// it under thousands of randomized readiness-first orders against a
// transport that enforces NCCL's matching rule (tests/test_edge_order.cpp).
//
// NCCL pairs the k-th ncclSend of a communicator with the k-th ncclRecv of
// its peer; the two sides must agree on what the k-th message is. The rule:
//   - one communicator (and one stream on each side) per directed rank pair
//     (src -> dst): the messages of one direction never queue behind
//     another direction's, so a blocked send waits only for its own peer;
//   - the sender numbers messages in the order their producers finish and
//     issues its sends in that order (EdgeSendOrder), and tells the receiver
//     "the k-th send is message X" on a side channel (an MPI message);
//   - the receiver issues its k-th receive only when it knows the k-th
//     message and has issued receives 0..k-1 (EdgeRecvOrder), whatever order
//     the announcements arrive in and whatever its own consumers are waiting
//     for.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rrfp {

// The directed rank pairs of a run that carry messages, numbered densely.
class EdgeIndex {
 public:
  explicit EdgeIndex(int ranks) : ranks_(ranks), id_(static_cast<size_t>(ranks) * ranks, -1) {}
  // The edge from `src` to `dst` (src != dst), created on first use.
  int edge(int src, int dst);
  int size() const { return static_cast<int>(pairs_.size()); }
  std::pair<int, int> ranks_of(int edge) const { return pairs_[edge]; }

 private:
  int ranks_;
  std::vector<int> id_;
  std::vector<std::pair<int, int>> pairs_;
};

// Sender side of one edge.
class EdgeSendOrder {
 public:
  // Message `msg` (any id the two sides share, e.g. a data handle's tag)
  // is ready: its sequence number, the position of its ncclSend.
  std::int64_t next(std::int64_t msg);
  std::int64_t sent() const { return next_; }

 private:
  std::int64_t next_ = 0;
};

// Receiver side of one edge.
class EdgeRecvOrder {
 public:
  // The sender announced that its send number `seq` carries `msg`.
  // Announcements may arrive in any order; a repeated or conflicting one is
  // a logic error (throws std::logic_error).
  void announce(std::int64_t seq, std::int64_t msg);
  // The receives that may be issued now, in sequence order, each returned
  // once: (seq, msg) for every consecutive announced seq from the next one
  // not yet issued.
  std::vector<std::pair<std::int64_t, std::int64_t>> releasable();
  std::int64_t issued() const { return issued_; }
  bool waiting() const { return !pending_.empty(); }  // announced, not issued yet

 private:
  std::int64_t issued_ = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> pending_;  // min-heap by seq
};

// The communicators rank `me` creates before a run, in the order every
// rank agrees on: for each directed pair it sends on (sends_to[r] > 0) or
// receives on (receives_from[r] > 0) and lacks (has(src, dst) false), sorted
// by (lower rank, higher rank, sender). Creating one blocks both its ranks
// until both arrive; the first pair not created anywhere has both ranks
// done with every pair before it, so both wait in it: no cycle of waits.
// (src, dst) pairs; tests/test_edge_order.cpp runs every rank's list.
std::vector<std::pair<int, int>> connection_order(int me, const std::vector<int>& sends_to,
                                                  const std::vector<int>& receives_from,
                                                  const std::function<bool(int src, int dst)>& has);

}  // namespace rrfp
