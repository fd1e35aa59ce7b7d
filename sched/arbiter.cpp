#include "sched/arbiter.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace rrfp {

Mode parse_mode(const std::string& policy) {
  if (policy == "rrfp") return Mode::ReadinessFirst;
  if (policy == "rrfp-fixed") return Mode::Strict;
  throw SpecError(fmt::format("unknown arbitration mode '{}' (rrfp or rrfp-fixed)", policy));
}

Arbiter::Arbiter(const Hint& hint, ArbiterOptions opt) : hint_(hint), opt_(std::move(opt)) {
  const TaskGraph& g = *hint_.graph;
  const int D = hint_.devices();
  if (opt_.inflight_slack < 0) throw SpecError("in-flight slack must not be negative");
  if (opt_.cap.empty()) {
    cap_ = hint_.peak_inflight();
    for (int& c : cap_) c += opt_.inflight_slack;
  } else {
    if (static_cast<int>(opt_.cap.size()) != D) throw SpecError("in-flight caps must be given for every device");
    cap_ = opt_.cap;
  }
  for (int c : cap_)
    if (c < 1) throw SpecError(fmt::format("in-flight cap {} is below 1: no forward could ever start", c));
  dev_.resize(D);
  fwd_index_.assign(g.size(), -1);
  for (int d = 0; d < D; ++d) {
    for (int id : hint_.order[d])
      if (g.task(id).kind == Kind::F) fwd_index_[id] = dev_[d].nfwd++;
    dev_[d].fenwick.assign(dev_[d].nfwd + 1, 0);
  }
  ready_.assign(g.size(), 0);
  started_.assign(g.size(), 0);
  finished_.assign(g.size(), 0);
  if (!opt_.local.empty() && static_cast<int>(opt_.local.size()) != D)
    throw SpecError("the local-device mask must cover every device");
  remaining_ = 0;
  for (int id = 0; id < g.size(); ++id) remaining_ += is_local(g.task(id).device) ? 1 : 0;
}

int Arbiter::started_before(const Device& dev, int fwd_index) const {
  int sum = 0;
  for (int i = fwd_index; i > 0; i -= i & -i) sum += dev.fenwick[i];
  return sum;
}

bool Arbiter::forward_allowed(const Device& dev, int device, int task) const {
  int reserve = 0;
  if (opt_.mode == Mode::ReadinessFirst) {
    int idx = fwd_index_[task];
    reserve = idx - started_before(dev, idx);
  }
  return dev.inflight + reserve + 1 <= cap_[device];
}

void Arbiter::on_ready(int task) {
  ready_[task] = 1;
  if (opt_.mode == Mode::Strict) return;
  const Task& t = hint_.graph->task(task);
  Device& dev = dev_[t.device];
  auto& heap = t.kind == Kind::F ? dev.fwd : dev.other;
  heap.push_back({hint_.rank[task], task});
  std::push_heap(heap.begin(), heap.end(), std::greater<Entry>());
}

void Arbiter::start(Device& dev, int task) {
  started_[task] = 1;
  ++running_;
  if (hint_.graph->task(task).kind == Kind::F) {
    dev.peak = std::max(dev.peak, ++dev.inflight);
    for (int i = fwd_index_[task] + 1; i <= dev.nfwd; i += i & -i) ++dev.fenwick[i];
  }
}

int Arbiter::take(int device) {
  Device& dev = dev_[device];
  const auto& order = hint_.order[device];
  if (opt_.mode == Mode::Strict) {
    if (dev.next >= order.size()) return -1;
    int task = order[dev.next];
    if (!ready_[task]) return -1;
    if (hint_.graph->task(task).kind == Kind::F && !forward_allowed(dev, device, task)) return -1;
    ++dev.next;
    start(dev, task);
    return task;
  }
  bool fwd_ok = !dev.fwd.empty() && forward_allowed(dev, device, dev.fwd.front().task);
  bool use_fwd;
  if (fwd_ok && !dev.other.empty()) use_fwd = dev.fwd.front().rank < dev.other.front().rank;
  else if (fwd_ok) use_fwd = true;
  else if (!dev.other.empty()) use_fwd = false;
  else return -1;
  auto& heap = use_fwd ? dev.fwd : dev.other;
  std::pop_heap(heap.begin(), heap.end(), std::greater<Entry>());
  int task = heap.back().task;
  heap.pop_back();
  start(dev, task);
  return task;
}

void Arbiter::on_finish(int task) {
  const Task& t = hint_.graph->task(task);
  finished_[task] = 1;
  if (is_backward(t.kind)) --dev_[t.device].inflight;
  --running_;
  --remaining_;
}

int Arbiter::ready_count(int device) const {
  const Device& dev = dev_[device];
  if (opt_.mode == Mode::ReadinessFirst) return static_cast<int>(dev.fwd.size() + dev.other.size());
  return dev.next < hint_.order[device].size() && ready_[hint_.order[device][dev.next]] ? 1 : 0;
}

bool Arbiter::stalled() const {
  if (running_ > 0 || remaining_ == 0) return false;
  // take() is the only question; ask it without side effects.
  for (int d = 0; d < hint_.devices(); ++d) {
    if (!is_local(d)) continue;  // another rank's business
    const Device& dev = dev_[d];
    if (opt_.mode == Mode::Strict) {
      if (dev.next < hint_.order[d].size()) {
        int task = hint_.order[d][dev.next];
        if (ready_[task] && (hint_.graph->task(task).kind != Kind::F || forward_allowed(dev, d, task))) return false;
      }
    } else {
      if (!dev.other.empty()) return false;
      if (!dev.fwd.empty() && forward_allowed(dev, d, dev.fwd.front().task)) return false;
    }
  }
  return true;
}

std::string Arbiter::describe() const {
  const TaskGraph& g = *hint_.graph;
  std::string s;
  for (int d = 0; d < hint_.devices(); ++d) {
    if (!is_local(d)) continue;
    const Device& dev = dev_[d];
    s += fmt::format("  device {}: in-flight {}/{}", d, dev.inflight, cap_[d]);
    if (opt_.mode == Mode::Strict) {
      if (dev.next < hint_.order[d].size()) {
        int task = hint_.order[d][dev.next];
        s += fmt::format(", next in order {} ({})", g.label(task), ready_[task] ? "ready" : "waiting for inputs");
        if (!ready_[task]) {
          std::string waits;
          for (int p : g.preds(task))
            if (!finished_[p]) waits += fmt::format(" {}", g.label(p));
          if (!waits.empty()) s += ", needs" + waits;
        }
      } else {
        s += ", order finished";
      }
    } else {
      s += fmt::format(", {} ready", dev.fwd.size() + dev.other.size());
      if (!dev.fwd.empty() && !forward_allowed(dev, d, dev.fwd.front().task))
        s += fmt::format(", forward {} held back by the in-flight cap", g.label(dev.fwd.front().task));
    }
    s += "\n";
  }
  return s;
}

}  // namespace rrfp
