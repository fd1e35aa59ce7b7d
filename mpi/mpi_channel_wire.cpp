#include "mpi/mpi_channel_wire.hpp"

#include <limits>
#include <vector>

namespace rrfp {

namespace {

constexpr int kDataTag = 7101;  // the announcements use 7102 (mpi/ordered_channels.cpp)

class MpiChannelWire final : public ChannelWire {
 public:
  explicit MpiChannelWire(MPI_Comm comm) : comm_(comm) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    send_.assign(size, MPI_REQUEST_NULL);
    recv_.assign(size, MPI_REQUEST_NULL);
  }
  void connect(const std::vector<int>&, const std::vector<int>&, double) override {}
  void start_send(int peer, const void* ptr, std::size_t bytes) override {
    MPI_Isend(ptr, static_cast<int>(bytes), MPI_BYTE, peer, kDataTag, comm_, &send_[peer]);
  }
  void start_receive(int peer, void* ptr, std::size_t bytes) override {
    MPI_Irecv(ptr, static_cast<int>(bytes), MPI_BYTE, peer, kDataTag, comm_, &recv_[peer]);
  }
  bool sent(int peer) override { return test(send_[peer]); }
  bool received(int peer) override { return test(recv_[peer]); }
  std::string error() override { return ""; }  // MPI's default handler aborts on errors
  std::size_t max_bytes() const override { return static_cast<std::size_t>(std::numeric_limits<int>::max()); }
  bool needs_polling() const override { return true; }
  const char* name() const override { return "MPI"; }

 private:
  static bool test(MPI_Request& r) {
    int flag = 0;
    MPI_Test(&r, &flag, MPI_STATUS_IGNORE);  // a completed request becomes MPI_REQUEST_NULL
    return flag != 0;
  }
  MPI_Comm comm_;
  std::vector<MPI_Request> send_, recv_;  // per peer: the transfer in flight
};

}  // namespace

std::unique_ptr<ChannelWire> mpi_channel_wire(MPI_Comm comm) { return std::make_unique<MpiChannelWire>(comm); }

}  // namespace rrfp
