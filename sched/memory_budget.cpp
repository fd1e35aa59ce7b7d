#include "sched/memory_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace rrfp {

std::string mib_text(double bytes) {
  const double mib = bytes / 1048576;
  return mib >= 0.005 || bytes <= 0 ? fmt::format("{:.2f} MiB", mib) : fmt::format("{:.0f} B", bytes);
}

MemoryBudget::MemoryBudget(const Hint& hint, MemoryBudgetOptions opt) : hint_(hint), opt_(std::move(opt)) {
  if (!enabled()) return;
  const TaskGraph& g = *hint_.graph;
  const int D = hint_.devices(), S = g.spec().stages;
  if (static_cast<int>(opt_.device_bytes.size()) != D)
    throw SpecError(fmt::format("memory budget: {} devices given, the hint has {}", opt_.device_bytes.size(), D));
  if (static_cast<int>(opt_.stage_bytes.size()) != S)
    throw SpecError(fmt::format("memory budget: activation bytes for {} stages given, the hint has {}",
                                opt_.stage_bytes.size(), S));
  for (double b : opt_.stage_bytes)
    if (!(b >= 0) || std::isinf(b)) throw SpecError(fmt::format("memory budget: activation bytes {} per microbatch", b));
  bytes_.resize(g.size());
  releases_.resize(g.size());
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    bytes_[id] = static_cast<std::int64_t>(std::ceil(opt_.stage_bytes[t.stage]));
    const bool has_w = g.find(Kind::W, t.stage, t.mb) >= 0;
    releases_[id] = opt_.release_at_w && has_w ? t.kind == Kind::W : is_backward(t.kind);
  }
  dev_.resize(D);
  for (int d = 0; d < D; ++d) {
    Device& dv = dev_[d];
    dv.prefix.push_back(0);
    std::int64_t held = 0;
    for (int id : hint_.order[d]) {  // the hint's own order: its peak must fit
      if (g.task(id).kind == Kind::F) {
        dv.prefix.push_back(dv.prefix.back() + bytes_[id]);
        held += bytes_[id];
        dv.hint_peak = std::max(dv.hint_peak, held);
      }
      if (releases_[id]) held -= bytes_[id];
    }
    dv.fenwick.assign(dv.prefix.size(), 0);
    if (!(opt_.device_bytes[d] >= static_cast<double>(dv.hint_peak)))
      throw SpecError(fmt::format("memory budget: device {} may hold {} of activations, but the hint's own "
                                  "order holds {} at its peak there",
                                  d, mib_text(opt_.device_bytes[d]), mib_text(static_cast<double>(dv.hint_peak))));
  }
}

std::int64_t MemoryBudget::started_before(const Device& d, int fwd_index) const {
  std::int64_t sum = 0;
  for (int i = fwd_index; i > 0; i -= i & -i) sum += d.fenwick[i];
  return sum;
}

bool MemoryBudget::allows(int device, int fwd_index, int task) const {
  if (!enabled()) return true;
  const Device& d = dev_[device];
  const std::int64_t reserve = d.prefix[fwd_index] - started_before(d, fwd_index);
  return static_cast<double>(d.held + reserve + bytes_[task]) <= opt_.device_bytes[device];
}

void MemoryBudget::on_start(int device, int fwd_index, int task) {
  if (!enabled()) return;
  Device& d = dev_[device];
  const std::int64_t b = bytes_[task];
  d.held += b;
  d.peak = std::max(d.peak, d.held);
  for (int i = fwd_index + 1; i < static_cast<int>(d.fenwick.size()); i += i & -i) d.fenwick[i] += b;
}

void MemoryBudget::on_finish(int task) {
  if (!enabled() || !releases_[task]) return;
  dev_[hint_.graph->task(task).device].held -= bytes_[task];
}

}  // namespace rrfp
