#include "mpi/mpi_tp_comm.hpp"

#include "mpi/mpi_comm.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <starpu_mpi.h>

#include "graph/pipeline_spec.hpp"
#include "mpi/mpi_session.hpp"

namespace rrfp {

namespace {

struct CallbackArg {
  std::mutex* m;
  std::condition_variable* cv;
  std::atomic<bool>* flag;
  std::atomic<int>* count;
};

void on_done(void* arg) {
  auto* a = static_cast<CallbackArg*>(arg);
  {
    std::lock_guard<std::mutex> g(*a->m);
    if (a->flag) a->flag->store(true);
    if (a->count) a->count->fetch_sub(1);
  }
  a->cv->notify_all();
  delete a;
}

}  // namespace

MpiTpComm::MpiTpComm(int groups, int members, int devices_per_rank, std::size_t max_floats, double timeout_s)
    : TpComm(groups, members),
      per_rank_(devices_per_rank),
      me_(mpi_world().rank),
      max_floats_(max_floats),
      timeout_s_(timeout_s),
      local_(groups, members, timeout_s) {
  loc_.resize(groups);
  for (int g = 0; g < groups; ++g) {
    loc_[g].resize(members);
    bool same = true, distinct = true;
    for (int a = 0; a < members; ++a)
      for (int b = a + 1; b < members; ++b) (rank_of(g, a) == rank_of(g, b) ? distinct : same) = false;
    if (!same && !distinct)
      throw SpecError(fmt::format("tensor-parallel group {} has several members on one rank and others elsewhere; "
                                  "put a group within one rank (--devices-per-rank a multiple of "
                                  "--tensor-parallel) or one member per rank",
                                  g));
  }
}

MpiTpComm::~MpiTpComm() { close(); }

std::int64_t MpiTpComm::tag(int group, int src, int dst, std::int64_t k) const {
  // Above the edge tags and the decision tags of execute_mpi.
  return (std::int64_t{1} << 59) + ((static_cast<std::int64_t>(group * members_ + src) * members_ + dst) << 32) + k;
}

void MpiTpComm::open() {
  if (open_) return;
  const std::size_t bytes = sizeof(std::int64_t) + max_floats_ * sizeof(float);
  for (int g = 0; g < groups(); ++g) {
    if (members_ < 2 || !cross_rank(g)) continue;
    for (int m = 0; m < members_; ++m) {
      if (rank_of(g, m) != me_) continue;
      auto L = std::make_unique<Local>();
      L->tx.assign(bytes, 0);
      starpu_vector_data_register(&L->tx_h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(L->tx.data()),
                                  static_cast<uint32_t>(bytes), 1);
      L->peers.resize(members_);
      for (int p = 0; p < members_; ++p) {
        if (p == m) continue;
        auto P = std::make_unique<Peer>();
        P->rx.assign(bytes, 0);
        starpu_vector_data_register(&P->rx_h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(P->rx.data()),
                                    static_cast<uint32_t>(bytes), 1);
        L->peers[p] = std::move(P);
      }
      loc_[g][m] = std::move(L);
    }
  }
  open_ = true;
}

void MpiTpComm::close() {
  if (!open_) return;
  for (auto& g : loc_)
    for (auto& L : g) {
      if (!L) continue;
      starpu_data_unregister(L->tx_h);
      for (auto& P : L->peers)
        if (P) starpu_data_unregister(P->rx_h);
      L.reset();
    }
  open_ = false;
}

void MpiTpComm::do_allreduce(int group, int member, std::int64_t id, float* data, std::size_t n) {
  if (!cross_rank(group)) return local_.do_allreduce(group, member, id, data, n);  // logged here already
  Local* L = loc_[group][member].get();
  if (!L) throw std::logic_error("MpiTpComm: all-reduce outside a run or for a member of another rank");
  if (n > max_floats_) throw std::logic_error(fmt::format("MpiTpComm: all-reduce of {} floats, at most {}", n, max_floats_));
  const std::int64_t k = L->k++;
  std::memcpy(L->tx.data(), &id, sizeof id);
  std::memcpy(L->tx.data() + sizeof id, data, n * sizeof(float));
  L->sends_left = members_ - 1;
  for (int p = 0; p < members_; ++p) {
    if (p == member) continue;
    Peer& P = *L->peers[p];
    P.arrived = false;
    if (starpu_mpi_irecv_detached(P.rx_h, rank_of(group, p), tag(group, p, member, k), MPI_COMM_WORLD, on_done,
                                  new CallbackArg{&m_, &cv_, &P.arrived, nullptr}) != 0)
      throw std::runtime_error("starpu_mpi_irecv_detached failed for a tensor-parallel all-reduce");
  }
  for (int p = 0; p < members_; ++p) {
    if (p == member) continue;
    if (starpu_mpi_isend_detached(L->tx_h, rank_of(group, p), tag(group, member, p, k), MPI_COMM_WORLD, on_done,
                                  new CallbackArg{&m_, &cv_, nullptr, &L->sends_left}) != 0)
      throw std::runtime_error("starpu_mpi_isend_detached failed for a tensor-parallel all-reduce");
  }
  {
    std::unique_lock<std::mutex> lk(m_);
    auto all_in = [&] {
      if (L->sends_left.load() != 0) return false;
      for (auto& P : L->peers)
        if (P && !P->arrived.load()) return false;
      return true;
    };
    if (!cv_.wait_for(lk, std::chrono::duration<double>(timeout_s_), all_in)) {
      std::string missing;
      for (int p = 0; p < members_; ++p)
        if (p != member && !L->peers[p]->arrived.load()) missing += fmt::format(" {} (rank {})", p, rank_of(group, p));
      throw std::runtime_error(fmt::format("tensor-parallel group {}: member {} waited {:.0f} s in collective {} of "
                                           "task {} for member(s){}",
                                           group, member, timeout_s_, collective_index(id), collective_task(id),
                                           missing.empty() ? " (sends not done)" : missing));
    }
  }
  for (int p = 0; p < members_; ++p) {
    if (p == member) continue;
    std::int64_t got;
    std::memcpy(&got, L->peers[p]->rx.data(), sizeof got);
    if (got != id)
      throw std::runtime_error(fmt::format("tensor-parallel group {}: collective order mismatch: member {} entered "
                                           "collective {} of task {}, member {} collective {} of task {}",
                                           group, member, collective_index(id), collective_task(id), p,
                                           collective_index(got), collective_task(got)));
  }
  // Member order, the same on every member: bitwise-equal results.
  std::vector<float> sum(n, 0.0f);
  for (int p = 0; p < members_; ++p) {
    const float* c = p == member ? data : reinterpret_cast<const float*>(L->peers[p]->rx.data() + sizeof(std::int64_t));
    if (p == 0) std::copy(c, c + n, sum.begin());
    else
      for (std::size_t i = 0; i < n; ++i) sum[i] += c[i];
  }
  std::copy(sum.begin(), sum.end(), data);
}

void MpiTpComm::sync_logs() {
  // [group, member, length, ids...] for each member this rank owns.
  std::vector<std::int64_t> mine;
  for (int g = 0; g < groups(); ++g)
    for (int m = 0; m < members_; ++m)
      if (rank_of(g, m) == me_) {
        const auto& l = log(g, m);
        mine.push_back(g);
        mine.push_back(m);
        mine.push_back(static_cast<std::int64_t>(l.size()));
        mine.insert(mine.end(), l.begin(), l.end());
      }
  const MpiWorld w = mpi_world();
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(w.size), displs(w.size);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, rrfp_mpi_comm());
  int total = 0;
  for (int r = 0; r < w.size; ++r) displs[r] = total, total += counts[r];
  std::vector<std::int64_t> all(total);
  MPI_Allgatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                 rrfp_mpi_comm());
  for (int i = 0; i < total;) {
    const int g = static_cast<int>(all[i]), m = static_cast<int>(all[i + 1]);
    const std::int64_t len = all[i + 2];
    mutable_log(g, m).assign(all.begin() + i + 3, all.begin() + i + 3 + len);
    i += 3 + static_cast<int>(len);
  }
}

}  // namespace rrfp
