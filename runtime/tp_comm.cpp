#include "runtime/tp_comm.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

namespace rrfp {

TpComm::TpComm(int groups, int members) : members_(members) {
  if (groups < 1 || members < 1) throw std::invalid_argument("TpComm: at least one group of one member");
  log_.assign(groups, std::vector<std::vector<std::int64_t>>(members));
}

void TpComm::allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) {
  log_[group][member].push_back(id);
  if (members_ > 1) do_allreduce(group, member, id, data, n);
}

void TpComm::clear_log() {
  for (auto& g : log_)
    for (auto& m : g) m.clear();
}

std::string collective_name(const std::string& task_label, std::int64_t id) {
  return fmt::format("{}#{}", task_label, collective_index(id));
}

LocalTpComm::LocalTpComm(int groups, int members, double timeout_s)
    : TpComm(groups, members), g_(groups), timeout_s_(timeout_s) {
  for (Group& g : g_) {
    g.in.assign(members, nullptr);
    g.ids.assign(members, -1);
    g.sizes.assign(members, 0);
  }
}

void LocalTpComm::do_allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) {
  Group& g = g_[group];
  std::unique_lock<std::mutex> lk(g.m);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  auto wait = [&](auto pred, const char* what) {
    if (!g.cv.wait_until(lk, deadline, [&] { return pred() || !g.error.empty(); }))
      g.error = fmt::format("tensor-parallel group {}: member {} waited {:.0f} s {} (collective {} of task {})", group,
                            member, timeout_s_, what, collective_index(id), collective_task(id));
    if (!g.error.empty()) {
      g.cv.notify_all();
      throw std::runtime_error(g.error);
    }
  };
  wait([&] { return g.leaving == 0; }, "for the previous collective to finish");
  const std::int64_t seq = g.seq;
  g.in[member] = data;
  g.ids[member] = id;
  g.sizes[member] = n;
  if (++g.arrived == members_) {
    // Everyone is here: check that this is one collective, sum in member order.
    for (int m = 1; m < members_; ++m)
      if (g.ids[m] != g.ids[0] || g.sizes[m] != g.sizes[0])
        g.error = fmt::format("tensor-parallel group {}: collective order mismatch: member 0 entered collective {} "
                              "of task {}, member {} collective {} of task {}",
                              group, collective_index(g.ids[0]), collective_task(g.ids[0]), m,
                              collective_index(g.ids[m]), collective_task(g.ids[m]));
    if (g.error.empty()) {
      g.sum.assign(g.in[0], g.in[0] + n);
      for (int m = 1; m < members_; ++m)
        for (std::size_t i = 0; i < n; ++i) g.sum[i] += g.in[m][i];
      g.leaving = members_;
    }
    g.cv.notify_all();
  }
  wait([&] { return g.seq == seq && g.leaving > 0; }, "for the other members");
  std::copy(g.sum.begin(), g.sum.end(), data);
  if (--g.leaving == 0) {
    g.arrived = 0;
    ++g.seq;
    g.cv.notify_all();
  }
}

}  // namespace rrfp
