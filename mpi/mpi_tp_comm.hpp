// Tensor-parallel collectives across MPI ranks, through StarPU-MPI.
//
// A group (the T members of one pipeline device) either lies within one
// rank, where its members are workers and meet in a LocalTpComm
// rendezvous, or has one member per rank. Then the k-th all-reduce of a
// member sends its contribution, headed by the collective's id, to every
// other member (detached StarPU-MPI send, tag = group, sender, receiver
// and k) and receives theirs; each member sums the T contributions in
// member order, so all get bitwise the same result, and a contribution
// that names another collective is an order mismatch, reported as such.
// Task bodies never call MPI directly: a blocking call there would hold a
// worker, and StarPU-MPI's messages are ordered with the graph's.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <condition_variable>
#include <vector>

#include <starpu.h>

#include "runtime/tp_comm.hpp"

namespace rrfp {

class MpiTpComm : public TpComm {
 public:
  // Slot d*T+t (member t of group d) lives on rank slot / devices_per_rank.
  // `max_floats`: the largest all-reduce. Throws SpecError for a group
  // split unevenly over ranks.
  MpiTpComm(int groups, int members, int devices_per_rank, std::size_t max_floats, double timeout_s);
  ~MpiTpComm() override;

  // Around each run, while StarPU-MPI is open (execute_mpi calls these).
  void open();
  void close();
  // Makes every member's log available on every rank (MPI; outside runs).
  void sync_logs() override;

 protected:
  void do_allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) override;

 private:
  struct Peer {  // one remote member of a group, seen from a local member
    std::vector<unsigned char> rx;
    starpu_data_handle_t rx_h = nullptr;
    std::atomic<bool> arrived{false};
  };
  struct Local {  // a local member of a cross-rank group
    std::vector<unsigned char> tx;
    starpu_data_handle_t tx_h = nullptr;
    std::vector<std::unique_ptr<Peer>> peers;  // by member (null for itself)
    std::atomic<int> sends_left{0};
    std::int64_t k = 0;  // collectives done
  };
  int rank_of(int group, int member) const { return (group * members_ + member) / per_rank_; }
  bool cross_rank(int group) const { return rank_of(group, 0) != rank_of(group, 1 % members_); }
  std::int64_t tag(int group, int src, int dst, std::int64_t k) const;

  int per_rank_, me_;
  std::size_t max_floats_;
  double timeout_s_;
  LocalTpComm local_;
  std::vector<std::vector<std::unique_ptr<Local>>> loc_;  // [group][member], null unless local and cross-rank
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace rrfp
