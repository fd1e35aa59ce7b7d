#include "sched/arbiter.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

namespace rrfp {

Mode parse_mode(const std::string& policy) {
  if (policy == "rrfp") return Mode::ReadinessFirst;
  if (policy == "rrfp-fixed") return Mode::Strict;
  if (policy == "rrfp-wait") return Mode::BoundedWait;
  throw SpecError(fmt::format("unknown arbitration mode '{}' (rrfp, rrfp-wait or rrfp-fixed)", policy));
}

const char* mode_policy_name(Mode m) {
  switch (m) {
    case Mode::ReadinessFirst: return "rrfp";
    case Mode::Strict: return "rrfp-fixed";
    case Mode::BoundedWait: return "rrfp-wait";
  }
  return "?";
}

Arbiter::Arbiter(const Hint& hint, ArbiterOptions opt)
    : hint_(hint), opt_(std::move(opt)), budget_(hint_, opt_.memory) {
  const TaskGraph& g = *hint_.graph;
  const int D = hint_.devices();
  if (opt_.inflight_slack < 0) throw SpecError("in-flight slack must not be negative");
  if (!(opt_.wait.ratio >= 0) || std::isinf(opt_.wait.ratio))
    throw SpecError(fmt::format("the bounded-wait ratio must be a finite number >= 0 (got {})", opt_.wait.ratio));
  if (!(opt_.wait.horizon >= 0) || std::isinf(opt_.wait.horizon))
    throw SpecError(fmt::format("the bounded-wait horizon must be a finite number >= 0 (got {})", opt_.wait.horizon));
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
    bool one_stage = true;
    for (int id : hint_.order[d]) {
      one_stage = one_stage && g.task(id).stage == g.task(hint_.order[d].front()).stage;
      if (g.task(id).kind == Kind::F) {
        fwd_index_[id] = dev_[d].nfwd++;
        dev_[d].last_fwd_rank = hint_.rank[id];
      }
    }
    // Only a device of one model stage has a drain of its own (below,
    // should_wait); with several (ZB-V's V), its W's fill gaps between the
    // other stage's backwards, where running them early measured better.
    if (!one_stage) dev_[d].last_fwd_rank = std::numeric_limits<int>::max();
    dev_[d].fenwick.assign(dev_[d].nfwd + 1, 0);
  }
  ready_.assign(g.size(), 0);
  started_.assign(g.size(), 0);
  finished_.assign(g.size(), 0);
  ready_t_.assign(g.size(), -1);
  ask_t_.assign(g.size(), -1);
  wait_t_.assign(g.size(), -1);
  start_t_.assign(g.size(), -1);
  finish_t_.assign(g.size(), -1);
  if (opt_.mode == Mode::BoundedWait) pass_mean_.assign(static_cast<size_t>(g.spec().stages) * kNumKinds, {});
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
  if (opt_.mode != Mode::Strict) {
    int idx = fwd_index_[task];
    reserve = idx - started_before(dev, idx);
  }
  return dev.inflight + reserve + 1 <= cap_[device] && budget_.allows(device, fwd_index_[task], task);
}

void Arbiter::on_ready(int task, double now) {
  ready_[task] = 1;
  ready_t_[task] = now;
  if (opt_.mode == Mode::Strict) return;
  const Task& t = hint_.graph->task(task);
  if (opt_.mode == Mode::BoundedWait) observe_arrival(t, task, now);
  push_ready(t, task);
}

// How long the last input took to arrive, when it came from another device
// whose finish this process saw (not another rank's task).
void Arbiter::observe_arrival(const Task& t, int task, double now) {
  int last = -1;
  for (int p : hint_.graph->preds(task)) {
    if (!finished_[p]) return;
    if (last < 0 || finish_t_[p] > finish_t_[last]) last = p;
  }
  if (last >= 0 && hint_.graph->task(last).device != t.device) input_delay_.add(std::max(0.0, now - finish_t_[last]));
}

void Arbiter::push_ready(const Task& t, int task) {
  Device& dev = dev_[t.device];
  auto& heap = t.kind == Kind::F ? dev.fwd : dev.other;
  heap.push_back({hint_.rank[task], task});
  std::push_heap(heap.begin(), heap.end(), std::greater<Entry>());
}

void Arbiter::start(Device& dev, int task, double now) {
  started_[task] = 1;
  start_t_[task] = now;
  ask_t_[task] = dev.first_ask;
  wait_t_[task] = dev.wait_decided;
  dev.first_ask = -1;
  dev.wait_decided = -1;
  ++running_;
  if (hint_.graph->task(task).kind == Kind::F) {
    dev.peak = std::max(dev.peak, ++dev.inflight);
    for (int i = fwd_index_[task] + 1; i <= dev.nfwd; i += i & -i) ++dev.fenwick[i];
    budget_.on_start(hint_.graph->task(task).device, fwd_index_[task], task);
  }
}

int Arbiter::peek(const Device& dev, int device, bool* use_fwd) const {
  const bool fwd_ok = !dev.fwd.empty() && forward_allowed(dev, device, dev.fwd.front().task);
  if (fwd_ok && !dev.other.empty()) *use_fwd = dev.fwd.front().rank < dev.other.front().rank;
  else if (fwd_ok) *use_fwd = true;
  else if (!dev.other.empty()) *use_fwd = false;
  else return -1;
  return (*use_fwd ? dev.fwd : dev.other).front().task;
}

int Arbiter::take(int device, double now) {
  Device& dev = dev_[device];
  if (dev.first_ask < 0) dev.first_ask = now;
  const auto& order = hint_.order[device];
  if (opt_.mode == Mode::Strict) {
    if (dev.next >= order.size()) return -1;
    int task = order[dev.next];
    if (!ready_[task]) return -1;
    if (hint_.graph->task(task).kind == Kind::F && !forward_allowed(dev, device, task)) return -1;
    ++dev.next;
    start(dev, task, now);
    return task;
  }
  dev.wake = -1;
  bool use_fwd = false;
  const int alt = peek(dev, device, &use_fwd);
  if (alt < 0) return -1;
  if (opt_.mode == Mode::BoundedWait && should_wait(dev, device, alt, now)) return -1;
  auto& heap = use_fwd ? dev.fwd : dev.other;
  std::pop_heap(heap.begin(), heap.end(), std::greater<Entry>());
  int task = heap.back().task;
  heap.pop_back();
  start(dev, task, now);
  return task;
}

double Arbiter::expected(int task) const {
  const Task& t = hint_.graph->task(task);
  const size_t base = static_cast<size_t>(t.stage) * kNumKinds;
  const double own = pass_mean_[base + static_cast<int>(t.kind)].get();
  if (own >= 0 || t.kind != Kind::W) return own;
  // No W of this stage has finished yet (the first deferred W comes before
  // any): its forward's mean stands in, the nearest cost of the same weights.
  return pass_mean_[base + static_cast<int>(Kind::F)].get();
}

// When all inputs of `task` will be here, from the start times of the
// predecessors still running and the mean durations seen so far; -1 when a
// predecessor has not started (or runs on another rank): its start is not
// predictable, and waiting for it could wait for ourselves.
double Arbiter::predicted_ready(int task, double now) const {
  const TaskGraph& g = *hint_.graph;
  const int d = g.task(task).device;
  const double delay = std::max(0.0, input_delay_.get());
  double r = now;
  for (int p : g.preds(task)) {
    const double hop = g.task(p).device != d ? delay : 0.0;
    if (finished_[p]) {
      r = std::max(r, finish_t_[p] + hop);
      continue;
    }
    if (!started_[p] || start_t_[p] < 0) return -1;
    const double e = expected(p);
    if (e < 0) return -1;
    r = std::max(r, start_t_[p] + e + hop);
  }
  return r;
}

// The device's first unstarted task in hint order; the cursor only moves
// forward (amortised O(1)).
int Arbiter::preferred(int device) {
  Device& dev = dev_[device];
  const auto& order = hint_.order[device];
  while (dev.pref < order.size() && started_[order[dev.pref]]) ++dev.pref;
  return dev.pref < order.size() ? order[dev.pref] : -1;
}

bool Arbiter::starves_a_consumer(int task) {
  const TaskGraph& g = *hint_.graph;
  const int d = g.task(task).device;
  for (int q : g.succs(task)) {
    const int qd = g.task(q).device;
    if (qd != d && is_local(qd) && preferred(qd) == q) return true;
  }
  return false;
}

// Instead of a W, a wait needs P predicted within this fraction of the W's
// expected duration (at most WaitRule::horizon), and lasts at most twice as
// long (at most WaitRule::ratio). 0.1 (for 0.2 x) missed zb-h1's late passes
// on StarPU, predicted 0.1-0.35 ms away with 2 ms passes; 0.4 kept every
// cell of the grid at 0.99 or more (perf/RESULTS.md, 2026-12-05).
constexpr double kFillerWaitHorizon = 0.4;
// A W after the device's last forward is the drain's: the hint puts it
// where the device would idle anyway, so running it early only pushes the
// pass it displaces (and the last microbatches' chain) back. Instead of
// such a W the device waits for P predicted before the W would end, for
// at most WaitRule::ratio of it. Without it rrfp-wait lost 3-4% to the
// fixed order on ZB-H1 with microbatches = stages = 6 to 16 (simulated,
// lognormal 0.3; perf/RESULTS.md, 2026-12-05). Devices of one model
// stage only: on ZB-V (two a device) it cost 1.5-3.5% (simulated and on
// StarPU at 8 x 8).
constexpr double kDrainWaitHorizon = 1.0;

// The rule: the device idles instead of starting `alt` when the hint's
// preferred task P (its first unstarted one) is predicted to be ready within
// horizon x alt's expected duration (0.4 x when alt is a W, 1 x when it is a
// W of the device's drain), another
// device waits for P's output next (any P when alt is a W), and the run has
// no in-flight slack; it idles for at most ratio x alt's expected duration,
// then gives up on P for good. One decision looks at P's predecessors and
// successors (constant degree in pipeline graphs).
bool Arbiter::should_wait(Device& dev, int device, int alt, double now) {
  // With in-flight slack the run has memory for readiness-first to run
  // forwards early, which is what the slack is for; waiting gave those gains
  // away in every slack cell measured. So a wait needs a slack-0 run, where
  // the hint's own peak leaves nothing to reorder into.
  if (opt_.inflight_slack > 0) return false;
  const int p = preferred(device);
  if (p < 0) return false;
  if (p == alt || ready_[p] || p == dev.gave_up) return false;
  // Both add to the stage's weight gradients: on StarPU alt, ready first,
  // already holds the commuting accumulator, so P cannot arrive before alt
  // has run, whatever its inputs predict.
  const Task &tp = hint_.graph->task(p), &ta = hint_.graph->task(alt);
  auto adds_weight_grads = [](Kind k) { return k == Kind::W || k == Kind::BW; };
  if (tp.stage == ta.stage && adds_weight_grads(tp.kind) && adds_weight_grads(ta.kind)) return false;
  if (dev.waiting_for == p) {
    if (now < dev.deadline) {
      dev.wake = dev.deadline;
      return true;
    }
    dev.gave_up = p;
    dev.waiting_for = -1;
    return false;
  }
  // A forward the cap would hold back anyway is not worth waiting for.
  if (tp.kind == Kind::F && !forward_allowed(dev, device, p)) return false;
  // A W is the filler split-backward hints defer into gaps: it holds no
  // memory, releases nobody, and idling long instead of running it measured
  // worse on every split-backward hint of the grid (perf/RESULTS.md, issue
  // 16). So instead of a W the device waits only for a P predicted well
  // inside the W (kFillerWaitHorizon), and briefly. Such a P, whatever
  // consumes it, is the hint's next pass arriving a moment late (bubble-free
  // zero-bubble steady states, drains): running the W would push it, and
  // every pass after it on this device, back by most of a W.
  const bool filler = ta.kind == Kind::W;
  const bool drain = filler && hint_.rank[alt] > dev.last_fwd_rank;
  // Otherwise waiting pays only when P is on the critical chain right now: a
  // device that consumes P's output has P's successor as its own next task
  // in the hint. If not, delaying P costs nobody and idling costs this device.
  if (!filler && !starves_a_consumer(p)) return false;
  const double a = expected(alt), r = predicted_ready(p, now);
  if (a <= 0 || r < 0) return false;
  double horizon = opt_.wait.horizon, ratio = opt_.wait.ratio;
  if (drain) {
    horizon = std::min(kDrainWaitHorizon, 2 * horizon);  // 1 x the W at the default 0.5; 0 turns waits off
  } else if (filler) {
    horizon = std::min(horizon, kFillerWaitHorizon);
    ratio = std::min(ratio, 2 * kFillerWaitHorizon);
  }
  // A wait gains P at most a - (r - now) over running alt first, on a
  // prediction from mean durations: only a prediction well inside alt's
  // duration is worth idling for. The deadline is longer, because giving
  // up after idling wastes the idle time already spent.
  if (r - now >= std::min(horizon, ratio) * a) return false;
  dev.waiting_for = p;
  dev.deadline = dev.wake = now + ratio * a;
  if (dev.wait_decided < 0) dev.wait_decided = now;
  ++waits_;
  return true;
}

void Arbiter::on_finish(int task, double now) {
  const Task& t = hint_.graph->task(task);
  finished_[task] = 1;
  finish_t_[task] = now;
  if (opt_.mode == Mode::BoundedWait) {
    if (start_t_[task] >= 0) pass_mean_[static_cast<size_t>(t.stage) * kNumKinds + static_cast<int>(t.kind)].add(now - start_t_[task]);
  }
  if (is_backward(t.kind)) --dev_[t.device].inflight;
  budget_.on_finish(task);
  --running_;
  --remaining_;
}

int Arbiter::ready_count(int device) const {
  const Device& dev = dev_[device];
  if (opt_.mode != Mode::Strict) return static_cast<int>(dev.fwd.size() + dev.other.size());
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
    if (budget_.enabled())
      s += fmt::format(", activations {:.2f}/{:.2f} MiB", budget_.held(d) / 1048576, budget_.budget(d) / 1048576);
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
      if (!dev.fwd.empty() && !forward_allowed(dev, d, dev.fwd.front().task)) {
        const int task = dev.fwd.front().task, idx = fwd_index_[task];
        const int reserved = idx - started_before(dev, idx);  // earlier forwards of the hint's order, not started
        if (dev.inflight + reserved + 1 > cap_[d])
          s += fmt::format(", forward {} held back by the in-flight cap ({} in flight + {} reserved for the earlier "
                           "forwards of the hint's order that have not started)",
                           g.label(task), dev.inflight, reserved);
        else
          s += fmt::format(", forward {} held back by the memory budget", g.label(task));
      }
      if (dev.wake >= 0 && dev.waiting_for >= 0) s += fmt::format(", waiting for {}", g.label(dev.waiting_for));
    }
    s += "\n";
  }
  return s;
}

}  // namespace rrfp
