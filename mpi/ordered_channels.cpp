#include "mpi/ordered_channels.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "comm/edge_order.hpp"
#include "mpi/mpi_channel_wire.hpp"
#include "mpi/mpi_session.hpp"
#include "runtime/executor.hpp"

namespace rrfp {

namespace {
constexpr int kAnnounceTag = 7102;  // the MPI wire sends the bytes with 7101

struct Out {  // a message waiting to be sent, in sequence order
  std::int64_t seq, msg;
  const void* ptr;
  std::size_t bytes;
  std::function<void()> done;
};
struct In {  // a receive task's buffer, waiting for its message's turn
  void* ptr;
  std::size_t bytes;
  std::function<void()> done;
};

// One directed pair's two ends as this rank sees them.
struct Peer {
  // Sending to the peer.
  EdgeSendOrder send_order;
  std::deque<Out> queue;
  bool sending = false;
  std::int64_t announce_out[3] = {0, 0, 0};  // seq, msg, bytes: must live until sent
  MPI_Request announce_out_req = MPI_REQUEST_NULL;
  int sends_left = 0;
  // Receiving from the peer.
  EdgeRecvOrder recv_order;
  std::map<std::int64_t, std::int64_t> announced_bytes;  // msg -> bytes
  std::deque<std::pair<std::int64_t, std::int64_t>> releasable;  // (seq, msg), in order
  std::map<std::int64_t, In> buffers;                            // msg -> its receive's buffer
  std::deque<std::int64_t> buffer_order;                         // msgs, as their buffers came (Receive::BufferOrder)
  std::int64_t announce_in[3] = {0, 0, 0};
  MPI_Request announce_req = MPI_REQUEST_NULL;
  bool receiving = false;
  std::int64_t receiving_into = -1;  // the message whose buffer the receive in flight fills
  int announcements_left = 0, receives_left = 0;
};
}  // namespace

struct MpiOrderedChannels::State {
  MPI_Comm comm;
  std::unique_ptr<ChannelWire> wire;
  Receive receive = Receive::Announced;
  int me = 0;
  mutable std::mutex m;
  std::condition_variable work;  // a send or a receive buffer came: no need to wait out the back-off
  std::vector<Peer> peers;
  bool stop = false;
  std::string error;

  bool busy() const {
    for (const Peer& p : peers)
      if (p.sends_left > 0 || p.receives_left > 0) return true;
    return false;
  }

  // One pass over every pair; the callbacks of what completed go to `done`.
  bool step(std::vector<std::function<void()>>& done) {
    bool moved = false;
    for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
      Peer& p = peers[r];
      // The head of the send queue goes out, with its announcement.
      if (!p.sending && !p.queue.empty()) {
        const Out& o = p.queue.front();
        p.announce_out[0] = o.seq, p.announce_out[1] = o.msg, p.announce_out[2] = static_cast<std::int64_t>(o.bytes);
        MPI_Isend(p.announce_out, 3, MPI_INT64_T, r, kAnnounceTag, comm, &p.announce_out_req);
        wire->start_send(r, o.ptr, o.bytes);
        p.sending = moved = true;
      }
      if (p.sending) {
        int flag = 0;  // true for a request already completed (MPI_REQUEST_NULL)
        MPI_Test(&p.announce_out_req, &flag, MPI_STATUS_IGNORE);
        if (flag && wire->sent(r)) {
          done.push_back(std::move(p.queue.front().done));
          p.queue.pop_front();
          p.sending = false;
          --p.sends_left;
          moved = true;
        }
      }
      // Announcements, in whatever order they come.
      if (p.announcements_left > 0 && p.announce_req == MPI_REQUEST_NULL)
        MPI_Irecv(p.announce_in, 3, MPI_INT64_T, r, kAnnounceTag, comm, &p.announce_req);
      if (p.announce_req != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Test(&p.announce_req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
          p.recv_order.announce(p.announce_in[0], p.announce_in[1]);
          p.announced_bytes[p.announce_in[1]] = p.announce_in[2];
          for (auto sm : p.recv_order.releasable()) p.releasable.push_back(sm);
          --p.announcements_left;
          moved = true;
        }
      }
      // The next receive in sequence order, once its task gave a buffer
      // (the wrong design: into the oldest buffer given, whatever it is for).
      if (!p.receiving && !p.releasable.empty()) {
        const std::int64_t msg = p.releasable.front().second;
        std::int64_t target = -1;
        if (receive == Receive::Announced && p.buffers.count(msg)) target = msg;
        if (receive == Receive::BufferOrder && !p.buffer_order.empty()) target = p.buffer_order.front();
        if (target >= 0) {
          const In& in = p.buffers[target];
          const std::int64_t bytes = p.announced_bytes[msg];
          if (bytes != static_cast<std::int64_t>(in.bytes)) {
            if (error.empty())
              error = fmt::format("rank {}: message {} from rank {} has {} bytes, its receive expects {}", me, msg, r,
                                  bytes, in.bytes);
            continue;
          }
          wire->start_receive(r, in.ptr, static_cast<std::size_t>(bytes));
          p.receiving_into = target;
          p.receiving = moved = true;
        }
      }
      if (p.receiving) {
        if (wire->received(r)) {
          const std::int64_t target = p.receiving_into;
          done.push_back(std::move(p.buffers[target].done));
          p.buffers.erase(target);
          if (auto it = std::find(p.buffer_order.begin(), p.buffer_order.end(), target); it != p.buffer_order.end())
            p.buffer_order.erase(it);
          p.announced_bytes.erase(p.releasable.front().second);
          p.releasable.pop_front();
          p.receiving = false;
          --p.receives_left;
          moved = true;
        }
      }
    }
    return moved;
  }

  void loop() {
    auto idle = std::chrono::microseconds(10);
    for (;;) {
      std::vector<std::function<void()>> done;
      bool moved, moving = false;
      {
        std::lock_guard<std::mutex> g(m);
        if (stop && !busy()) return;
        moved = step(done);
        if (error.empty()) error = wire->error();
        for (const Peer& p : peers) moving = moving || p.sending || p.receiving;
      }
      for (auto& f : done) f();  // ends tasks: outside the lock
      if (moved || (moving && wire->needs_polling())) {
        // A message on MPI's wire moves only while someone calls MPI (a
        // large one in many fragments): no sleep until it is through.
        if (!moved) std::this_thread::yield();
        idle = std::chrono::microseconds(10);
        continue;
      }
      {
        std::unique_lock<std::mutex> lk(m);
        work.wait_for(lk, idle);
      }
      // NCCL's transfers move on the GPU: their end is looked for often,
      // without taking a core.
      idle = std::min(idle * 2, std::chrono::microseconds(moving ? 50 : 200));
    }
  }
};

MpiOrderedChannels::MpiOrderedChannels(MPI_Comm comm, Receive receive, std::unique_ptr<ChannelWire> wire)
    : st_(std::make_shared<State>()) {
  st_->comm = comm;
  st_->wire = wire ? std::move(wire) : mpi_channel_wire(comm);
  st_->receive = receive;
  int size = 1;
  MPI_Comm_rank(comm, &st_->me);
  MPI_Comm_size(comm, &size);
  st_->peers.resize(size);
}

MpiOrderedChannels::~MpiOrderedChannels() {
  if (!th_.joinable()) return;
  bool busy;
  {
    std::lock_guard<std::mutex> g(st_->m);
    st_->stop = true;
    busy = st_->busy();
  }
  // A run that failed leaves transfers that never end: the process is
  // about to abort every rank, so the thread is left to it (it holds the state).
  if (busy) th_.detach();
  else th_.join();
}

void MpiOrderedChannels::start(const std::vector<int>& sends_to, const std::vector<int>& receives_from,
                               double timeout_s) {
  finish();
  std::lock_guard<std::mutex> g(st_->m);
  const int R = static_cast<int>(st_->peers.size());
  if (static_cast<int>(sends_to.size()) != R || static_cast<int>(receives_from.size()) != R)
    throw std::logic_error("MpiOrderedChannels::start: one count per rank");
  st_->peers.assign(R, Peer{});
  try {
    st_->wire->connect(sends_to, receives_from, timeout_s);  // pairwise, every rank: before any transfer
  } catch (const std::exception& e) {
    throw UnrecoverableError(fmt::format("ordered channels over {}: {}", st_->wire->name(), e.what()));
  }
  for (int r = 0; r < R; ++r) {
    st_->peers[r].sends_left = sends_to[r];
    st_->peers[r].announcements_left = st_->peers[r].receives_left = receives_from[r];
  }
  st_->stop = false;
  st_->error.clear();
  th_ = std::thread([s = st_] { s->loop(); });
}

namespace {
// MPI counts are ints: a bigger message would be cut. The watchdog stops the run with the error.
bool too_big(MpiOrderedChannels::State& st, std::int64_t msg, std::size_t bytes) {
  if (bytes <= st.wire->max_bytes()) return false;
  if (st.error.empty())
    st.error = fmt::format("rank {}: message {} has {} bytes; ordered channels over {} move at most {} bytes per message",
                           st.me, msg, bytes, st.wire->name(), st.wire->max_bytes());
  return true;
}
}  // namespace

void MpiOrderedChannels::send(int dst, std::int64_t msg, const void* ptr, std::size_t bytes, std::function<void()> done) {
  std::lock_guard<std::mutex> g(st_->m);
  if (too_big(*st_, msg, bytes)) return;
  Peer& p = st_->peers.at(dst);
  p.queue.push_back({p.send_order.next(msg), msg, ptr, bytes, std::move(done)});
  st_->work.notify_one();
}

void MpiOrderedChannels::receive(int src, std::int64_t msg, void* ptr, std::size_t bytes, std::function<void()> done) {
  std::lock_guard<std::mutex> g(st_->m);
  if (too_big(*st_, msg, bytes)) return;
  st_->peers.at(src).buffers[msg] = {ptr, bytes, std::move(done)};
  st_->peers.at(src).buffer_order.push_back(msg);
  st_->work.notify_one();
}

void MpiOrderedChannels::finish() {
  if (!th_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(st_->m);
    st_->stop = true;
  }
  th_.join();
}

std::string MpiOrderedChannels::error() const {
  std::lock_guard<std::mutex> g(st_->m);
  return st_->error;
}

MPI_Comm ordered_channels_comm() {
  static MPI_Comm comm = [] {
    MPI_Comm c;
    (void)mpi_world();  // MPI initialised first
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    return c;
  }();
  return comm;
}

}  // namespace rrfp
