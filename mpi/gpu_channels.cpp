#include "mpi/gpu_channels.hpp"

#include <mutex>

#include <fmt/format.h>

#include "mpi/mpi_comm.hpp"
#include "mpi/mpi_session.hpp"
#include "mpi/ordered_channels.hpp"
#include "runtime/executor.hpp"

namespace rrfp {

namespace {
constexpr int kWireIdTag = 7103;  // the channels' own tags are 7101, 7102; the contract test's 7104

std::mutex& lock() {
  static std::mutex m;
  return m;
}
GpuWireFactory& factory() {
  static GpuWireFactory f = nullptr;
  return f;
}

WireRendezvous mpi_rendezvous() {
  WireRendezvous rv;
  const MpiWorld w = mpi_world();
  rv.me = w.rank;
  rv.ranks = w.size;
  rv.send = [](int dst, const void* data, std::size_t bytes) { mpi_send(data, bytes, dst, kWireIdTag); };
  rv.receive = [](int src, void* data, std::size_t bytes) { mpi_recv(data, bytes, src, kWireIdTag); };
  rv.all_gather = [ranks = w.size](const void* mine, std::size_t bytes) {
    std::vector<char> all(bytes * ranks);
    MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes), MPI_BYTE,
                  rrfp_mpi_comm());
    return all;
  };
  return rv;
}
}  // namespace

void set_gpu_channel_wire(GpuWireFactory f) {
  std::lock_guard<std::mutex> g(lock());
  factory() = f;
}

MessageChannels* nccl_ordered_channels(int cuda_device) {
  std::lock_guard<std::mutex> g(lock());
  if (!factory())
    throw SpecError("--rank-transport ordered with --cuda moves messages with NCCL: this rrfp was built without it");
  // One wire per process: its first run gathers every rank's GPU and
  // creates communicators pairwise, so a second wire on one rank alone
  // would wait for ranks that never join it.
  static int gpu = -1;
  static MpiOrderedChannels* c = nullptr;
  if (!c) {
    c = new MpiOrderedChannels(ordered_channels_comm(), MpiOrderedChannels::Receive::Announced,
                               factory()(cuda_device, mpi_rendezvous()));
    gpu = cuda_device;
  }
  if (cuda_device != gpu)
    throw UnrecoverableError(fmt::format("the ordered channels' NCCL communicators are on GPU {}; this run's "
                                         "devices are on GPU {} (one GPU per rank for the whole process)",
                                         gpu, cuda_device));
  return c;
}

}  // namespace rrfp
