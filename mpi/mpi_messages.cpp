#include "mpi/mpi_messages.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "mpi/mpi_comm.hpp"

namespace rrfp {

struct MpiMessages::Pending {
  std::vector<MPI_Request> requests;
};

MpiMessages::MpiMessages() : pending_(std::make_unique<Pending>()) {}
MpiMessages::~MpiMessages() = default;

void MpiMessages::send(const void* data, std::size_t bytes, int dest, int tag) {
  auto& r = pending_->requests;
  r.emplace_back();
  MPI_Isend(data, mpi_message_count(bytes), MPI_BYTE, dest, tag, rrfp_mirror_comm(), &r.back());
}

void MpiMessages::recv(void* data, std::size_t bytes, int source, int tag) {
  auto& r = pending_->requests;
  r.emplace_back();
  MPI_Irecv(data, mpi_message_count(bytes), MPI_BYTE, source, tag, rrfp_mirror_comm(), &r.back());
}

bool MpiMessages::wait(const std::atomic<bool>& stop, const std::atomic<bool>& hurry) {
  auto& r = pending_->requests;
  auto nap = std::chrono::microseconds(2);
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(r.size()), r.data(), &done, MPI_STATUSES_IGNORE);
    if (done) {
      r.clear();
      return true;
    }
    if (stop.load()) return false;
    if (hurry.load()) {
      std::this_thread::yield();
      continue;
    }
    // A peer still running its graph: its message may be milliseconds
    // away, and every wake-up here takes the core from a worker.
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
  }
}

}  // namespace rrfp
