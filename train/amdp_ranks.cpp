#include "train/amdp_ranks.hpp"

#include <fmt/format.h>

#include "runtime/executor.hpp"
#include "train/weight_versions.hpp"

namespace rrfp::train {

namespace {

std::size_t bytes_of(const torch::Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// A packed buffer is on the running task's data node: host memory on a
// CPU worker, the worker's GPU on a CUDA worker (with --cuda every task
// runs on one, on the GPU of the rank's model). So torch reads and writes
// it, on the task's stream.
torch::Device buffer_device() {
  const int gpu = worker_cuda_device();
  return gpu < 0 ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu));
}

torch::Tensor header_at(const void* buf) {
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(buffer_device());
  return torch::from_blob(const_cast<void*>(buf), {1}, options);
}

std::int64_t header_of(const void* buf) {
  return header_at(buf).item<std::int64_t>();  // on a GPU: waits for the stream
}

// The tensors of a packed buffer, shaped like `like` and on its device,
// viewed, not copied.
std::vector<torch::Tensor> view(const void* buf, const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> out;
  auto* p = const_cast<char*>(static_cast<const char*>(buf)) + sizeof(std::int64_t);
  for (const auto& t : like) {
    out.push_back(torch::from_blob(p, t.sizes(), t.options()));
    p += bytes_of(t);
  }
  return out;
}

// Copies `ts` one after another behind an 8-byte header.
void pack(const std::vector<torch::Tensor>& ts, std::int64_t header, void* buf) {
  torch::NoGradGuard no_grad;
  header_at(buf).fill_(header);
  const auto into = view(buf, ts);
  for (size_t i = 0; i < ts.size(); ++i) into[i].copy_(ts[i]);
}

}  // namespace

AmdpRanks::AmdpRanks(const Hint& hint, int group, int rank, int devices_per_rank)
    : hint_(hint), group_(group), rank_(rank), K_(devices_per_rank), S_(hint.spec().stages) {
  const PipelineSpec& spec = hint.spec();
  const int groups = spec.microbatches / group_;
  expected_.assign(S_, std::vector<int>(groups, 0));
  for (int s = 0; s < S_; ++s)
    for (int m = 0; m < spec.microbatches; ++m) expected_[s][m / group_] += spec.device_of(s, m) / K_ == rank_;
  begin_window();
}

int AmdpRanks::home_rank(int s) const { return hint_.spec().device_of(s, 0) / K_; }

int AmdpRanks::accumulator_device(int s, int d) const {
  const PipelineSpec& spec = hint_.spec();
  const int r = d / K_;
  if (r == home_rank(s)) return spec.device_of(s, 0);
  int first = d;
  for (const auto& pipe : spec.placement)
    if (pipe[s] / K_ == r) first = std::min(first, pipe[s]);
  return first;
}

std::vector<unsigned char> AmdpRanks::local_microbatches(int s) const {
  const PipelineSpec& spec = hint_.spec();
  std::vector<unsigned char> out(spec.microbatches);
  for (int m = 0; m < spec.microbatches; ++m) out[m] = spec.device_of(s, m) / K_ == rank_;
  return out;
}

std::size_t AmdpRanks::state_bytes(const Pipeline& pipe, int s) {
  std::size_t b = 0;
  for (const auto& p : pipe.stage(s).params()) {
    if (p.t.scalar_type() != torch::kFloat)
      throw SpecError(fmt::format("--async amdp under mpirun moves stage {}'s weights as floats; {} is not one", s,
                                  p.name));
    b += bytes_of(p.t);
  }
  return b;
}

void AmdpRanks::begin_window() {
  counted_.assign(S_, std::vector<int>(expected_.empty() ? 0 : expected_[0].size(), 0));
  installed_.assign(S_, 0);
}

bool AmdpRanks::count_backward(int s, int m) {
  const int k = m / group_;
  return ++counted_[s][k] == expected_[s][k];
}

void AmdpRanks::pack_sum(const std::vector<torch::Tensor>& sums, std::int64_t count, void* buf) {
  pack(sums, count, buf);
}

void AmdpRanks::add_remote_sums(int s, int group, std::vector<torch::Tensor>& sums) const {
  const EpilogueIo* io = epilogue_io();
  if (!io) throw std::logic_error(fmt::format("stage {}: the update has no state bytes to read", s));
  std::vector<int> seen;
  for (const auto& [device, buf] : io->accumulators) {
    const int r = device / K_;
    if (r == rank_) continue;  // this rank's own copies are in `sums` already
    // Every other rank counted its microbatches of s in this group.
    int want = 0;
    for (int m = group * group_; m < (group + 1) * group_; ++m) want += hint_.spec().device_of(s, m) / K_ == r;
    const std::int64_t held = header_of(buf);
    if (held != want)
      throw std::runtime_error(fmt::format("stage {} group {}: the gradient sum from rank {} holds {} microbatches, "
                                           "expected {}",
                                           s, group, r, held, want));
    const auto remote = view(buf, sums);
    for (size_t i = 0; i < sums.size(); ++i) sums[i].add_(remote[i]);
  }
}

void AmdpRanks::pack_weights(const Pipeline& pipe, int s, std::int64_t version, void* buf) {
  pack(stage_weight_data(pipe, s), version, buf);
}

std::int64_t AmdpRanks::packed_version(const void* buf) { return header_of(buf); }
std::vector<torch::Tensor> AmdpRanks::packed_weights(const Pipeline& pipe, int s, const void* buf) {
  return view(buf, stage_weight_data(pipe, s));
}
bool AmdpRanks::install(Pipeline& pipe, int s, const void* buf) {
  const std::int64_t v = header_of(buf);
  if (v <= installed_[s]) return false;
  torch::NoGradGuard no_grad;
  auto params = stage_weight_data(pipe, s);
  const auto w = view(buf, params);
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(w[i]);
  installed_[s] = static_cast<int>(v);
  return true;
}

}  // namespace rrfp::train
