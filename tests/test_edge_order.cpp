// NCCL point-to-point ordering under readiness-first arbitration
// (comm/edge_order.hpp, docs/gpu.md): thousands of seeded runs of the zoo's
// hints, one device per rank, random pass and transfer times and
// announcement delays, through a transport that enforces NCCL's rules:
// on a communicator the k-th send matches the k-th receive and both must
// carry the same message, and an operation holds the head of its stream
// until its peer reaches the head of its own. The design never mismatches
// or deadlocks; two wrong designs are caught (the test fails loudly for
// them, here asserted).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "comm/edge_order.hpp"
#include "hints/generators.hpp"
#include "sched/arbiter.hpp"

namespace rrfp {
namespace {

enum class Design {
  Announced,       // the design: sends in completion order, receives after announcement, a stream per edge and side
  ReceiverGuess,   // wrong: the receiver posts its receives in its consumers' hint order, no announcement
  OneStreamPerRank // wrong: the design's order, but every NCCL call of a rank on one stream
};

struct Outcome {
  bool complete = false;
  std::string error;  // mismatch or deadlock, empty when complete
  bool reordered = false;  // some edge sent in an order other than the consumers' hint order
};

struct Op {
  bool send;
  int edge;
  std::int64_t pos;  // position on the communicator (k-th send / k-th receive)
  std::int64_t msg;
};

class PipelineRun {
 public:
  PipelineRun(const Hint& h, Design d, std::uint64_t seed) : h_(h), g_(*h.graph), d_(d), rng_(seed), edges_(h.devices()) {
    const int n = g_.size();
    waiting_.assign(n, 0);
    for (int t = 0; t < n; ++t)
      for (int p : g_.preds(t)) {
        ++waiting_[t];
        if (dev(p) != dev(t)) {
          const int e = edges_.edge(dev(p), dev(t));
          msg_of_[{p, t}] = static_cast<std::int64_t>(consumer_.size());
          consumer_.push_back(t);
          if (static_cast<int>(by_edge_.size()) <= e) by_edge_.resize(e + 1);
          by_edge_[e].push_back(msg_of_[{p, t}]);
        }
      }
    send_.resize(edges_.size());
    recv_.resize(edges_.size());
    comm_.resize(edges_.size());
  }

  Outcome go() {
    Arbiter arb(h_, ArbiterOptions{});
    arb_ = &arb;
    busy_.assign(h_.devices(), 0);
    std::lognormal_distribution<double> cost(0.0, 0.6);
    for (int t = 0; t < g_.size(); ++t) dur_.push_back(cost(rng_));
    if (d_ == Design::ReceiverGuess) {  // receives posted up front in the consumers' hint order
      for (int e = 0; e < edges_.size(); ++e) {
        std::vector<std::int64_t> m = by_edge_[e];
        std::stable_sort(m.begin(), m.end(), [&](auto a, auto b) { return h_.rank[consumer_[a]] < h_.rank[consumer_[b]]; });
        for (std::int64_t msg : m) post_recv(e, msg);
      }
    }
    for (int t = 0; t < g_.size(); ++t)
      if (waiting_[t] == 0) arb.on_ready(t);
    dispatch();
    while (!events_.empty() && error_.empty()) {
      Event ev = events_.top();
      events_.pop();
      now_ = ev.time;
      ev.act();
      dispatch();
    }
    Outcome o;
    o.reordered = reordered_;
    o.error = error_;
    if (o.error.empty() && finished_ < g_.size())
      o.error = fmt::format("deadlock: {} of {} tasks done, every stream head waits for its peer", finished_, g_.size());
    o.complete = o.error.empty();
    return o;
  }

 private:
  struct Event {
    double time;
    long order;
    std::function<void()> act;
    bool operator<(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
  };
  struct Comm {  // what each side posted, by position
    std::vector<std::int64_t> sends, recvs;
  };

  int dev(int t) const { return g_.task(t).device; }
  void at(double t, std::function<void()> f) { events_.push({t, seq_++, std::move(f)}); }

  void dispatch() {
    for (int d = 0; d < h_.devices(); ++d) {
      if (busy_[d]) continue;
      const int t = arb_->take(d);
      if (t < 0) continue;
      busy_[d] = 1;
      at(now_ + dur_[t], [this, t] { finish(t); });
    }
  }

  void finish(int t) {
    busy_[dev(t)] = 0;
    arb_->on_finish(t);
    ++finished_;
    for (int s : g_.succs(t)) {
      if (dev(s) == dev(t)) {
        arrive(s);
        continue;
      }
      const int e = edges_.edge(dev(t), dev(s));
      const std::int64_t msg = msg_of_.at({t, s});
      const std::int64_t k = send_[e].next(msg);
      if (k != static_cast<std::int64_t>(std::find(by_edge_[e].begin(), by_edge_[e].end(), msg) - by_edge_[e].begin()))
        reordered_ = true;  // not the edge's submission order
      post(Op{true, e, k, msg});
      if (d_ != Design::ReceiverGuess) {
        std::uniform_real_distribution<double> delay(0.0, 4.0);  // the side channel reorders announcements
        at(now_ + delay(rng_), [this, e, k, msg] {
          recv_[e].announce(k, msg);
          for (auto [seq, m] : recv_[e].releasable()) post_recv(e, m);
        });
      }
    }
  }

  void arrive(int t) {
    if (--waiting_[t] == 0) arb_->on_ready(t);
  }

  void post_recv(int e, std::int64_t msg) {
    post(Op{false, e, static_cast<std::int64_t>(comm_[e].recvs.size()), msg});
  }

  // Enqueues an NCCL call on its stream and checks NCCL's matching rule.
  void post(const Op& op) {
    Comm& c = comm_[op.edge];
    auto& mine = op.send ? c.sends : c.recvs;
    const auto& theirs = op.send ? c.recvs : c.sends;
    mine.push_back(op.msg);
    if (op.pos < static_cast<std::int64_t>(theirs.size()) && theirs[op.pos] != op.msg && error_.empty())
      error_ = fmt::format("mismatch on edge {}->{}: call {} sends message {} but receives message {}",
                           edges_.ranks_of(op.edge).first, edges_.ranks_of(op.edge).second, op.pos,
                           op.send ? op.msg : theirs[op.pos], op.send ? theirs[op.pos] : op.msg);
    auto [src, dst] = edges_.ranks_of(op.edge);
    const int rank = op.send ? src : dst;
    const int stream = d_ == Design::OneStreamPerRank ? rank : rank * edges_.size() * 2 + op.edge * 2 + op.send;
    streams_[stream].push_back(op);
    pump();
  }

  // Starts every matched pair whose two calls head their streams.
  void pump() {
    bool moved = true;
    while (moved && error_.empty()) {
      moved = false;
      for (auto& [sid, q] : streams_) {
        if (q.empty() || !q.front().send || started_.count(key(q.front()))) continue;
        const Op s = q.front();
        for (auto& [rid, r] : streams_)
          if (!r.empty() && !r.front().send && r.front().edge == s.edge && r.front().pos == s.pos) {
            started_.insert(key(s));
            std::uniform_real_distribution<double> wire(0.05, 1.0);
            const int from_stream = sid, to_stream = rid;
            at(now_ + wire(rng_), [this, s, from_stream, to_stream] { complete(s, from_stream, to_stream); });
            moved = true;
            break;
          }
      }
    }
  }

  void complete(const Op& s, int from_stream, int to_stream) {
    streams_[from_stream].pop_front();
    streams_[to_stream].pop_front();
    arrive(consumer_[s.msg]);
    pump();
  }

  static std::int64_t key(const Op& op) { return (static_cast<std::int64_t>(op.edge) << 40) + op.pos; }

  const Hint& h_;
  const TaskGraph& g_;
  Design d_;
  std::mt19937_64 rng_;
  EdgeIndex edges_;
  Arbiter* arb_ = nullptr;
  std::vector<int> waiting_, busy_;
  std::vector<double> dur_;
  std::map<std::pair<int, int>, std::int64_t> msg_of_;
  std::vector<int> consumer_;                      // per message
  std::vector<std::vector<std::int64_t>> by_edge_;  // per edge: messages in the graph's order
  std::vector<EdgeSendOrder> send_;
  std::vector<EdgeRecvOrder> recv_;
  std::vector<Comm> comm_;
  std::map<int, std::deque<Op>> streams_;
  std::set<std::int64_t> started_;
  std::priority_queue<Event> events_;
  double now_ = 0;
  long seq_ = 0;
  int finished_ = 0;
  bool reordered_ = false;
  std::string error_;
};

std::vector<Hint> zoo() {
  std::vector<Hint> out;
  for (int S : {2, 4}) {
    out.push_back(make_hint("1f1b", {S, 8, 0, 0, 0}));
    out.push_back(make_hint("zb-h1", {S, 8, 0, -1, 0}));
    out.push_back(make_hint("gpipe", {S, 6, 0, 0, 0}));
    out.push_back(make_hint("interleaved-1f1b", {S, 8, 2, 0, 0}));
    out.push_back(make_hint("zbv", {S, 8, 0, -1, 0}));
  }
  out.push_back(make_hint("chimera", {4, 8, 0, 0, 0}));
  out.push_back(make_hint("dualpipev", {4, 8, 0, -1, 0}));
  return out;
}

TEST(EdgeOrder, RecvReleasedInSequenceWhateverTheAnnouncementOrder) {
  EdgeRecvOrder r;
  r.announce(2, 12);
  r.announce(1, 11);
  EXPECT_TRUE(r.releasable().empty());  // 0 is not known yet
  r.announce(0, 10);
  const auto got = r.releasable();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], std::make_pair(std::int64_t{0}, std::int64_t{10}));
  EXPECT_EQ(got[2], std::make_pair(std::int64_t{2}, std::int64_t{12}));
  EXPECT_THROW(r.announce(1, 99), std::logic_error);  // already received
  r.announce(4, 14);
  EXPECT_THROW(r.announce(4, 15), std::logic_error);  // announced twice
  EdgeIndex ix(3);
  EXPECT_EQ(ix.edge(0, 1), 0);
  EXPECT_EQ(ix.edge(1, 0), 1);  // the other direction is another edge
  EXPECT_EQ(ix.edge(0, 1), 0);
  EXPECT_THROW(ix.edge(2, 2), std::logic_error);
}

// The design, 200 seeds per hint (2600 runs): complete, no mismatch, and
// the arbitration did reorder the messages of some edge.
TEST(EdgeOrder, ReadinessFirstOrdersNeverMismatchOrDeadlock) {
  int runs = 0, reordered = 0;
  for (const Hint& h : zoo())
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
      const Outcome o = PipelineRun(h, Design::Announced, seed).go();
      ASSERT_TRUE(o.complete) << h.name << " seed " << seed << ": " << o.error;
      ++runs;
      reordered += o.reordered;
    }
  std::printf("%d runs complete without a mismatch, %d of them with messages sent out of the graph's order\n", runs,
              reordered);
  EXPECT_GT(reordered, runs / 10) << "the runs hardly reordered anything: the test would prove little";
}

// The transport catches a wrong design instead of passing it: receives in
// the receiver's own (hint) order mismatch, and one stream per rank for
// all NCCL calls deadlocks.
TEST(EdgeOrder, WrongDesignsAreCaught) {
  int mismatches = 0, deadlocks = 0, runs = 0;
  for (const Hint& h : zoo())
    for (std::uint64_t seed = 1; seed <= 40; ++seed, ++runs) {
      const Outcome a = PipelineRun(h, Design::ReceiverGuess, seed).go();
      mismatches += a.error.rfind("mismatch", 0) == 0;
      const Outcome b = PipelineRun(h, Design::OneStreamPerRank, seed).go();
      deadlocks += b.error.rfind("deadlock", 0) == 0;
    }
  std::printf("wrong designs: receiver's own order mismatched in %d of %d runs, one stream per rank deadlocked in %d\n",
              mismatches, runs, deadlocks);
  EXPECT_GT(mismatches, 0) << "a receiver guessing the order was never caught";
  EXPECT_GT(deadlocks, 0) << "one stream per rank never deadlocked";
}

// Creating a communicator blocks both its ranks until both reach it. Every
// rank's list runs to the end when a pair is created as soon as both ranks
// have it at the head of their lists; false when they wait in a cycle.
bool all_lists_complete(std::vector<std::vector<std::pair<int, int>>> lists) {
  std::vector<size_t> at(lists.size(), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < static_cast<int>(lists.size()); ++r) {
      if (at[r] == lists[r].size()) continue;
      const auto [src, dst] = lists[r][at[r]];
      const int other = src == r ? dst : src;
      if (at[other] < lists[other].size() && lists[other][at[other]] == lists[r][at[r]]) {
        ++at[r], ++at[other];
        moved = true;
      }
    }
  }
  for (size_t r = 0; r < lists.size(); ++r)
    if (at[r] != lists[r].size()) return false;
  return true;
}

// The NCCL wire creates its communicators pairwise in connection_order():
// random traffic among 2-9 ranks (some pairs already connected by an
// earlier run) never leaves ranks waiting for each other; each rank's own
// sends first, a natural wrong order, does.
TEST(EdgeOrder, CommunicatorsAreCreatedWithoutACycleOfWaits) {
  std::mt19937_64 rng(7);
  int wrong_stuck = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int R = 2 + static_cast<int>(rng() % 8);
    std::vector<std::vector<int>> count(R, std::vector<int>(R, 0));  // messages src -> dst
    std::vector<std::vector<bool>> has(R, std::vector<bool>(R, false));
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < R; ++b)
        if (a != b) {
          count[a][b] = rng() % 3 == 0 ? 0 : 1 + static_cast<int>(rng() % 4);
          has[a][b] = rng() % 5 == 0;
        }
    std::vector<std::vector<std::pair<int, int>>> lists(R), wrong(R);
    for (int me = 0; me < R; ++me) {
      std::vector<int> sends(R), receives(R);
      for (int r = 0; r < R; ++r) sends[r] = count[me][r], receives[r] = count[r][me];
      lists[me] = connection_order(me, sends, receives, [&](int s, int d) { return bool(has[s][d]); });
      for (const auto& [s, d] : lists[me]) {
        ASSERT_TRUE(s == me || d == me);
        ASSERT_GT(count[s][d], 0);
        ASSERT_FALSE(has[s][d]);
      }
      wrong[me] = lists[me];
      std::stable_sort(wrong[me].begin(), wrong[me].end(), [me](auto x, auto y) { return (x.first == me) > (y.first == me); });
    }
    ASSERT_TRUE(all_lists_complete(lists)) << "trial " << trial << ": " << R << " ranks wait in a cycle";
    wrong_stuck += !all_lists_complete(wrong);
  }
  EXPECT_GT(wrong_stuck, 100) << "the wrong order never deadlocked: the check would prove little";
  EXPECT_THROW(connection_order(3, {1, 1}, {1, 1}, [](int, int) { return false; }), std::logic_error);
}

}  // namespace
}  // namespace rrfp