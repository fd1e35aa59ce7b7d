// Point-to-point messages that run beside a graph (the mirror reduction
// overlapped with the step, train/mirror_overlap.hpp): nonblocking, on a
// communicator of their own (rrfp_mirror_comm(), mpi_comm.hpp), so they
// never match StarPU-MPI's messages, the ordered channels' or our
// collectives, and waited for without holding a core (Open MPI's blocking
// calls spin, and the workers need every core while the graph runs).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace rrfp {

class MpiMessages {
 public:
  MpiMessages();
  ~MpiMessages();  // requests still pending are left as they are
  MpiMessages(const MpiMessages&) = delete;
  MpiMessages& operator=(const MpiMessages&) = delete;

  // The caller keeps `data` alive and untouched until wait() returned true.
  void send(const void* data, std::size_t bytes, int dest, int tag);
  void recv(void* data, std::size_t bytes, int source, int tag);
  // Until every message posted so far is through: MPI_Testall between
  // sleeps growing to 1 ms, or only yielding the core once `hurry` is
  // true (nothing else left to run: the graph is done). False when `stop`
  // turned true first (the messages are left to MPI_Abort: a failed step
  // ends the job).
  bool wait(const std::atomic<bool>& stop, const std::atomic<bool>& hurry);

 private:
  struct Pending;
  std::unique_ptr<Pending> pending_;
};

}  // namespace rrfp
