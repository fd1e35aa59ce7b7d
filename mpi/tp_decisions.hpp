// Tensor parallelism across ranks: the leader of a device group tells its
// followers on other ranks, one StarPU-MPI message per task it starts,
// which task that is (the k-th decision of device d: tag kDecisionTags +
// d * n + k). Followers hand the decisions to the policy in the leader's
// order (rrfp_sched_follow), whatever order the messages arrive in.
// Coordination of the policy, not data of the graph: no task reads it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <starpu.h>

#include "hints/hint.hpp"
#include "runtime/rank_transport.hpp"

namespace rrfp {

class TpDecisions final : public DecisionChannel {
 public:
  // Slot d*T+t lives on rank slot / K; `me` is this rank.
  TpDecisions(const Hint& hint, int T, int K, int me);
  ~TpDecisions() override;
  TpDecisions(const TpDecisions&) = delete;
  TpDecisions& operator=(const TpDecisions&) = delete;

  bool active() const override { return !dev_.empty(); }
  // Decision messages this rank waits for, and how many arrived.
  int expected() const override { return expected_; }
  int received() const override { return received_.load(); }
  // Posts every receive of this rank's followers.
  void post_receives() override;
  // The leader (member 0) of `device` starts graph task `task`: tell the
  // followers on other ranks. "" or the reason it failed.
  std::string announce(int device, int task) override;

 private:
  struct Device {
    std::vector<int> dests;  // leader's rank: ranks of remote followers
    std::vector<std::int64_t> out;
    std::vector<starpu_data_handle_t> out_h;
    int next_out = 0;        // touched by the leader's worker only
    std::vector<int> followers;  // follower's rank: its members of the group
    std::vector<std::int64_t> in;
    std::vector<starpu_data_handle_t> in_h;
    std::vector<unsigned char> got;
    int next_in = 0;
  };
  struct Arg {
    TpDecisions* self;
    int device, k;
  };
  static void on_received(void* arg);

  int n_, T_, K_;
  std::vector<Device> dev_;
  std::vector<Arg> args_;
  std::mutex m_;
  int expected_ = 0;
  std::atomic<int> received_{0};
};

}  // namespace rrfp
