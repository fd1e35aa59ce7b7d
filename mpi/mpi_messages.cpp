#include "mpi/mpi_messages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "graph/pipeline_spec.hpp"
#include "mpi/mpi_comm.hpp"

namespace rrfp {

struct MpiMessages::Pending {
  std::vector<MPI_Request> requests;
};

namespace {
int count_of(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw SpecError(fmt::format("an MPI message of {} bytes is over MPI's int count", bytes));
  return static_cast<int>(bytes);
}
}  // namespace

MpiMessages::MpiMessages() : pending_(std::make_unique<Pending>()) {}
MpiMessages::~MpiMessages() = default;

void MpiMessages::send(const void* data, std::size_t bytes, int dest, int tag) {
  auto& r = pending_->requests;
  r.emplace_back();
  MPI_Isend(data, count_of(bytes), MPI_BYTE, dest, tag, rrfp_mirror_comm(), &r.back());
}

void MpiMessages::recv(void* data, std::size_t bytes, int source, int tag) {
  auto& r = pending_->requests;
  r.emplace_back();
  MPI_Irecv(data, count_of(bytes), MPI_BYTE, source, tag, rrfp_mirror_comm(), &r.back());
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
