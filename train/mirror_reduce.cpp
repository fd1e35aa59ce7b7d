#include "train/mirror_reduce.hpp"

#include <optional>

#include "mpi/mpi_messages.hpp"
#include "mpi/mpi_session.hpp"

namespace rrfp::train {

namespace {

std::size_t bytes_of(const torch::Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// MPI moves host memory: with --cuda the sums cross through a host copy.
bool send_sum(const std::vector<torch::Tensor>& sum, const std::vector<int>& dests, int tag,
              const std::atomic<bool>& stop, const std::atomic<bool>& hurry) {
  std::vector<torch::Tensor> host;  // alive until the sends are through
  MpiMessages msgs;
  for (const auto& t : sum) host.push_back(t.to(torch::kCPU).contiguous());
  for (int d : dests)
    for (const auto& h : host) msgs.send(h.data_ptr(), bytes_of(h), d, tag);
  if (msgs.wait(stop, hurry)) return true;
  (void)new std::vector<torch::Tensor>(std::move(host));  // stopped: MPI may still read them until the job aborts
  return false;
}

// A sum shaped like the stage's parameters (their gradients' shapes), on
// their device; none when stopped.
std::optional<std::vector<torch::Tensor>> recv_sum(const Pipeline& pipe, int s, int source, int tag,
                                                   const std::atomic<bool>& stop, const std::atomic<bool>& hurry) {
  const auto& params = pipe.stage(s).params();
  std::vector<torch::Tensor> host;
  MpiMessages msgs;
  for (const auto& p : params) {
    host.push_back(torch::empty(p.t.sizes(), p.t.options().device(torch::kCPU)));
    msgs.recv(host.back().data_ptr(), bytes_of(host.back()), source, tag);
  }
  if (!msgs.wait(stop, hurry)) {
    (void)new std::vector<torch::Tensor>(std::move(host));  // stopped: MPI may still write them until the job aborts
    return std::nullopt;
  }
  for (size_t k = 0; k < host.size(); ++k) host[k] = host[k].to(params[k].t.device());
  return host;
}

}  // namespace

std::vector<int> mirror_order(const MpiTrainPlan& plan) {
  const int S = static_cast<int>(plan.mirror.size()) / plan.members;
  std::vector<int> order;
  for (int s = S - 1; s >= 0; --s)
    for (int t = 0; t < plan.members; ++t) order.push_back(plan.at(s, t));
  return order;
}

bool mirror_reduce_pair(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank, int i,
                        const std::atomic<bool>& stop, const std::atomic<bool>& hurry) {
  const int N = static_cast<int>(plan.mirror.size());  // tag i for the hops, N + i for the result
  const int s = i / plan.members, t = i % plan.members;
  const auto& hops = plan.mirror[i];
  if (hops.empty() || !plan.local[i]) return true;
  Pipeline& pipe = *pipes[t];
  for (size_t k = 0; k < hops.size(); ++k) {
    if (hops[k].rank != rank) continue;
    if (k > 0) {
      auto partial = recv_sum(pipe, s, hops[k - 1].rank, i, stop, hurry);
      if (!partial) return false;
      pipe.add_partial_sum(s, hops[k].first_mb, std::move(*partial));
    }
    if (k + 1 < hops.size() && !send_sum(pipe.running_sum(s), {hops[k + 1].rank}, i, stop, hurry)) return false;
  }
  const int last = hops.back().rank;
  if (rank == last) {
    std::vector<int> others;
    for (int r : plan.holders[i])
      if (r != last) others.push_back(r);
    return send_sum(pipe.running_sum(s), others, N + i, stop, hurry);
  }
  auto sum = recv_sum(pipe, s, last, N + i, stop, hurry);
  if (!sum) return false;
  pipe.set_stage_sum(s, std::move(*sum));
  return true;
}

void mirror_reduce(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank) {
  const std::atomic<bool> never{false}, now{true};
  for (int i : mirror_order(plan)) mirror_reduce_pair(pipes, plan, rank, i, never, now);
}

void merge_microbatch_losses(Pipeline& pipe) {
  std::vector<float> l = pipe.microbatch_losses();
  mpi_sum_in_place(l.data(), static_cast<int>(l.size()));
  pipe.set_microbatch_losses(std::move(l));
}

}  // namespace rrfp::train
