#include "mpi/tp_decisions.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <starpu_mpi.h>

#include "sched/rrfp_sched.h"

namespace rrfp {

namespace {
constexpr std::int64_t kDecisionTags = std::int64_t{1} << 58;
}

TpDecisions::TpDecisions(const Hint& hint, int T, int K, int me) : n_(hint.graph->size()), T_(T), K_(K) {
  if (T < 2) return;
  const int D = hint.devices();
  dev_.resize(D);
  bool any = false;
  for (int d = 0; d < D; ++d) {
    Device& dc = dev_[d];
    const int leader = (d * T) / K, count = static_cast<int>(hint.order[d].size());
    std::vector<int> ranks;
    for (int t = 1; t < T; ++t) {
      const int r = (d * T + t) / K;
      if (r != leader && std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
      if (r == me && r != leader) dc.followers.push_back(t);
    }
    if (me == leader && !ranks.empty()) {
      dc.dests = ranks;
      dc.out.assign(count, -1);
      dc.out_h.assign(count, nullptr);
      for (int k = 0; k < count; ++k)
        starpu_variable_data_register(&dc.out_h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&dc.out[k]),
                                      sizeof(std::int64_t));
      any = true;
    }
    if (!dc.followers.empty()) {
      dc.in.assign(count, -1);
      dc.in_h.assign(count, nullptr);
      dc.got.assign(count, 0);
      for (int k = 0; k < count; ++k) {
        starpu_variable_data_register(&dc.in_h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&dc.in[k]),
                                      sizeof(std::int64_t));
        args_.push_back({this, d, k});
      }
      expected_ += count;
      any = true;
    }
  }
  if (!any) dev_.clear();
}

TpDecisions::~TpDecisions() {
  for (Device& dc : dev_) {
    for (auto h : dc.out_h) starpu_data_unregister(h);
    for (auto h : dc.in_h) starpu_data_unregister(h);
  }
}

void TpDecisions::post_receives() {
  for (Arg& a : args_)
    if (starpu_mpi_irecv_detached(dev_[a.device].in_h[a.k], (a.device * T_) / K_,
                                  kDecisionTags + std::int64_t{a.device} * n_ + a.k, MPI_COMM_WORLD, on_received,
                                  &a) != 0)
      throw std::runtime_error(fmt::format("starpu_mpi_irecv_detached for a decision of device {} failed", a.device));
}

std::string TpDecisions::announce(int device, int task) {
  if (dev_.empty()) return "";
  Device& d = dev_[device];
  if (d.dests.empty()) return "";
  const int k = d.next_out++;
  d.out[k] = task;
  for (int dest : d.dests)
    if (starpu_mpi_isend_detached(d.out_h[k], dest, kDecisionTags + std::int64_t{device} * n_ + k, MPI_COMM_WORLD,
                                  nullptr, nullptr) != 0)
      return fmt::format("starpu_mpi_isend_detached of decision {} of device {} failed", k, device);
  return "";
}

// Decisions of different k may overtake each other: hand them over in order.
void TpDecisions::on_received(void* arg) {
  auto* a = static_cast<Arg*>(arg);
  TpDecisions* self = a->self;
  {
    std::lock_guard<std::mutex> g(self->m_);
    Device& d = self->dev_[a->device];
    d.got[a->k] = 1;
    for (; d.next_in < static_cast<int>(d.got.size()) && d.got[d.next_in]; ++d.next_in)
      for (int member : d.followers) rrfp_sched_follow(RRFP_INITIAL_SCHED_CTX, a->device, member, static_cast<int>(d.in[d.next_in]));
  }
  self->received_.fetch_add(1);
}

}  // namespace rrfp
