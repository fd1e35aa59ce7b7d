// Collectives of tensor-parallel groups, called from inside task bodies.
//
// As with MPI and NCCL, the k-th all-reduce a member enters is matched with
// the k-th all-reduce of every other member of its group: nothing says
// which tensor is which. Members that enter collectives in different orders
// would sum unrelated tensors (or, with different sizes, deadlock). The
// policies keep the order (sched/rrfp_policy.hpp); this layer checks it:
// every call names its collective, a mismatch is an error naming both, and
// each member's sequence of names is logged so tests can compare them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rrfp {

// Names a collective: graph task id and the index of the call inside it
// (a task runs at most kMaxCollectivesPerTask).
inline constexpr int kMaxCollectivesPerTask = 64;
inline std::int64_t collective_id(int task, int index) {
  return static_cast<std::int64_t>(task) * kMaxCollectivesPerTask + index;
}
inline int collective_task(std::int64_t id) { return static_cast<int>(id / kMaxCollectivesPerTask); }
inline int collective_index(std::int64_t id) { return static_cast<int>(id % kMaxCollectivesPerTask); }

class TpComm {
 public:
  TpComm(int groups, int members);
  virtual ~TpComm() = default;
  int groups() const { return static_cast<int>(log_.size()); }
  int members() const { return members_; }

  // Sums `n` floats over the members of `group`, in member order (so every
  // member gets bitwise the same result), in place. Throws on a collective
  // order mismatch or when a member does not arrive in time.
  void allreduce(int group, int member, std::int64_t id, float* data, std::size_t n);

  // Collective ids per group and member, in the order entered (members of
  // this process only; each is written by its member's thread).
  const std::vector<std::int64_t>& log(int group, int member) const { return log_[group][member]; }
  void clear_log();
  // Makes every member's log readable here (multi-rank comms gather them).
  virtual void sync_logs() {}

 protected:
  std::vector<std::int64_t>& mutable_log(int group, int member) { return log_[group][member]; }
  virtual void do_allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) = 0;
  int members_;

 private:
  std::vector<std::vector<std::vector<std::int64_t>>> log_;
};

// The members of a group are threads of this process (one StarPU worker
// each): a rendezvous per collective.
class LocalTpComm : public TpComm {
 public:
  LocalTpComm(int groups, int members, double timeout_s = 30);

  // The rendezvous itself, without logging (MpiTpComm uses it for its
  // groups that lie within one rank and keeps the log itself).
  void do_allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) override;

 private:
  struct Group {
    std::mutex m;
    std::condition_variable cv;
    std::int64_t seq = 0;      // collectives completed
    int arrived = 0, leaving = 0;
    std::vector<const float*> in;  // per member, while it waits
    std::vector<std::int64_t> ids;   // per member: the collective it entered
    std::vector<std::size_t> sizes;  // per member: its float count
    std::vector<float> sum;
    std::string error;  // sticky: the group is broken
  };
  std::vector<Group> g_;
  double timeout_s_;
};

std::string collective_name(const std::string& task_label, std::int64_t id);

}  // namespace rrfp
