#include "train/mirror_reduce.hpp"

#include "mpi/mpi_session.hpp"

namespace rrfp::train {

namespace {

std::size_t bytes_of(const torch::Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// MPI moves host memory: with --cuda the sums cross through a host copy.
void send_sum(const std::vector<torch::Tensor>& sum, int dest, int tag) {
  for (const auto& t : sum) {
    const torch::Tensor c = t.to(torch::kCPU).contiguous();
    mpi_send(c.data_ptr(), bytes_of(c), dest, tag);
  }
}

// A sum shaped like the stage's parameters (their gradients' shapes), on
// their device.
std::vector<torch::Tensor> recv_sum(const Pipeline& pipe, int s, int source, int tag) {
  std::vector<torch::Tensor> out;
  for (const auto& p : pipe.stage(s).params()) {
    torch::Tensor h = torch::empty(p.t.sizes(), p.t.options().device(torch::kCPU));
    mpi_recv(h.data_ptr(), bytes_of(h), source, tag);
    out.push_back(h.to(p.t.device()));
  }
  return out;
}

}  // namespace

void mirror_reduce(const std::vector<Pipeline*>& pipes, const MpiTrainPlan& plan, int rank) {
  const int S = static_cast<int>(plan.mirror.size()) / plan.members, N = S * plan.members;
  for (int s = 0; s < S; ++s)
    for (int t = 0; t < plan.members; ++t) {
      const int i = plan.at(s, t);  // the message tag of its hops; N + i of its result
      const auto& hops = plan.mirror[i];
      if (hops.empty()) continue;
      Pipeline& pipe = *pipes[t];
      for (size_t k = 0; k < hops.size(); ++k) {
        if (hops[k].rank != rank) continue;
        if (k > 0) pipe.add_partial_sum(s, hops[k].first_mb, recv_sum(pipe, s, hops[k - 1].rank, i));
        if (k + 1 < hops.size()) send_sum(pipe.running_sum(s), hops[k + 1].rank, i);
      }
      const int last = hops.back().rank;
      if (rank == last) {
        const auto sum = pipe.running_sum(s);
        for (int r : plan.holders[i])
          if (r != last) send_sum(sum, r, N + i);
      } else if (plan.local[i]) {
        pipe.set_stage_sum(s, recv_sum(pipe, s, last, N + i));
      }
    }
}

void merge_microbatch_losses(Pipeline& pipe) {
  std::vector<float> l = pipe.microbatch_losses();
  mpi_sum_in_place(l.data(), static_cast<int>(l.size()));
  pipe.set_microbatch_losses(std::move(l));
}

}  // namespace rrfp::train
