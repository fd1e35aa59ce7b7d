#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "codelets/cost_model.hpp"
#include "codelets/splitmix.hpp"
#include "hints/update_rules.hpp"

namespace rrfp {

void CommModel::validate() const {
  if (!(latency_s >= 0 && latency_s <= kMaxTaskSeconds))
    throw SpecError(fmt::format("link latency must be in [0, {:g}] s (got {:g})", kMaxTaskSeconds, latency_s));
  if (!(bandwidth_Bps > 0)) throw SpecError(fmt::format("link bandwidth must be > 0 (got {})", bandwidth_Bps));
  if (!(message_bytes >= 0)) throw SpecError(fmt::format("message size must be >= 0 (got {})", message_bytes));
  if (!(message_bytes / bandwidth_Bps <= kMaxTaskSeconds))
    throw SpecError(fmt::format("a message of {:g} MB would take {:g} s over a {:g} Gbit/s link, over an hour: the "
                                "message size or the bandwidth is wrong",
                                message_bytes * 1e-6, message_bytes / bandwidth_Bps, bandwidth_Bps * 8e-9));
}

namespace {

struct Event {
  enum Type { Finish, Arrival, Release, Wake, UpdateDone, Reduced };
  double time;
  long long seq;   // FIFO among equal times: deterministic
  int who;  // Finish: the task; Arrival: the consumer task; Release, Wake, UpdateDone: the device; Reduced: the update
  Type type;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

ArbiterOptions arbiter_options(const Hint& h, const SimOptions& o) {
  ArbiterOptions a;
  a.mode = o.mode;
  a.inflight_slack = o.inflight_slack;
  a.cap = o.inflight_cap;
  a.wait = o.wait;
  if (!o.memory_budget.empty()) {
    a.memory.device_bytes = o.memory_budget;
    a.memory.stage_bytes = o.memory.activation_bytes;
    if (a.memory.stage_bytes.empty()) a.memory.stage_bytes.assign(h.graph->spec().stages, 1.0);
    a.memory.release_at_w = o.memory.release_at_w;
  }
  return a;
}

class Sim {
 public:
  Sim(const Hint& h, const SimOptions& o)
      : h_(h), g_(*h.graph), o_(o), arb_(h, arbiter_options(h, o)), holds_(*h.graph, o.update_group, o.gate_lag) {}

  SimResult run() {
    if (!o_.duration && !o_.end_at) throw SpecError("simulator needs a duration function");
    o_.comm.validate();
    const int n = g_.size(), D = h_.devices();
    r_.start.assign(n, -1);
    r_.end.assign(n, -1);
    r_.busy.assign(D, 0);
    r_.executed.assign(D, {});
    missing_.assign(n, 0);
    busy_until_.assign(D, 0);
    idle_.assign(D, 1);
    wake_pending_.assign(D, -1);
    held_act_.assign(D, 0);
    r_.peak_activation_bytes.assign(D, 0);
    link_free_.assign(static_cast<size_t>(D) * D, 0);
    if (!(o_.update_s >= 0) || std::isinf(o_.update_s))
      throw SpecError(fmt::format("update time must be finite and >= 0 (got {:g})", o_.update_s));
    if (o_.update_s > 0 && o_.update_group == 0)
      throw SpecError("an update time needs update groups (SimOptions::update_group): when would it run?");
    due_.assign(D, {});
    running_updates_.assign(D, {});
    holders_.assign(g_.spec().stages, {});
    for (const auto& row : g_.spec().placement)
      for (int s = 0; s < g_.spec().stages; ++s)
        if (std::find(holders_[s].begin(), holders_[s].end(), row[s]) == holders_[s].end()) holders_[s].push_back(row[s]);
    for (int id = 0; id < n; ++id) {
      missing_[id] = g_.preds(id).size() + holds_.extra(id);
      if (missing_[id] == 0 && o_.source_ready && o_.source_ready(id) > 0) {
        missing_[id] = 1;
        push(o_.source_ready(id), id, Event::Arrival);
      } else if (missing_[id] == 0) {
        arb_.on_ready(id, 0);
      }
    }
    for (int d = 0; d < D; ++d) dispatch(d, 0);
    while (!q_.empty()) {
      double t = q_.top().time;
      touched_.clear();
      while (!q_.empty() && q_.top().time == t) {
        Event e = q_.top();
        q_.pop();
        switch (e.type) {
          case Event::Finish: finish(e.who, t); break;
          case Event::Arrival: ready_one(e.who, t); break;
          case Event::Release: release(e.who, t); break;
          case Event::Wake: touch(e.who); break;
          case Event::UpdateDone: update_done(e.who, t); break;
          case Event::Reduced: apply_update(e.who, t); break;
        }
      }
      if (o_.tie_shuffle_seed) shuffle_touched();
      for (int d : touched_) dispatch(d, t);
    }
    r_.complete = arb_.remaining() == 0;
    r_.waits = arb_.waits();
    if (!r_.complete) r_.stuck = "the run cannot progress:\n" + arb_.describe();
    else replica_allreduce();
    r_.makespan = reduced_until_;  // a last reduction with nothing after it (update_s 0)
    for (int d = 0; d < D; ++d) {
      r_.makespan = std::max(r_.makespan, busy_until_[d]);
      r_.peak_inflight.push_back(arb_.peak_inflight(d));
      r_.inflight_cap.push_back(arb_.cap(d));
    }
    double busy = 0;
    for (double b : r_.busy) busy += b;
    r_.bubble_ratio = r_.makespan > 0 ? 1.0 - busy / (D * r_.makespan) : 0;
    weights();
    return std::move(r_);
  }

 private:
  double act_bytes(int stage) const {
    return o_.memory.activation_bytes.empty() ? 1.0 : o_.memory.activation_bytes[stage];
  }
  void push(double t, int who, Event::Type type) { q_.push({t, seq_++, who, type}); }
  void touch(int d) {
    if (idle_[d] && std::find(touched_.begin(), touched_.end(), d) == touched_.end()) touched_.push_back(d);
  }

  void shuffle_touched() {  // Fisher-Yates on the seeded stream
    for (size_t i = touched_.size(); i > 1; --i)
      std::swap(touched_[i - 1], touched_[splitmix64_next(shuffle_state_) % i]);
  }

  void dispatch(int d, double t) {
    if (!idle_[d]) return;
    if (o_.hold_until) {
      const double h = o_.hold_until(d, static_cast<int>(r_.executed[d].size()), t);
      if (t < h) {
        if (h != wake_pending_[d]) wake_pending_[d] = h, push(h, d, Event::Wake);
        return;
      }
    }
    int task = arb_.take(d, t);
    if (task < 0) {
      // Bounded wait: ask again when the device gives up waiting.
      const double w = arb_.wake_at(d);
      if (w > t && w != wake_pending_[d]) {
        wake_pending_[d] = w;
        push(w, d, Event::Wake);
      }
      return;
    }
    double dur = o_.end_at ? o_.end_at(task, t) - t : o_.duration(task);
    if (!(dur >= 0)) throw SpecError(fmt::format("negative duration for task {}", g_.label(task)));
    const Task& k = g_.task(task);
    if (k.kind == Kind::F) {
      held_act_[d] += act_bytes(k.stage);
      r_.peak_activation_bytes[d] = std::max(r_.peak_activation_bytes[d], held_act_[d]);
    }
    idle_[d] = 0;
    r_.start[task] = t;
    r_.end[task] = t + dur;
    r_.busy[d] += dur;
    r_.executed[d].push_back(task);
    busy_until_[d] = t + dur;
    push(t + dur, task, Event::Finish);
  }

  void finish(int task, double t) {
    const Task& k = g_.task(task);
    const int d = k.device;
    arb_.on_finish(task, t);
    const bool releases = k.kind == Kind::BW || (k.kind == Kind::B && !o_.memory.release_at_w) ||
                          (k.kind == Kind::W && o_.memory.release_at_w);
    if (releases) held_act_[d] -= act_bytes(k.stage);
    if (const int u = holds_.completed(task); u >= 0) update_due(u, t);  // SimOptions::update_group
    double sender_free = t;
    if (o_.ask_delay) sender_free += std::max(0.0, o_.ask_delay(d, static_cast<int>(r_.executed[d].size())));
    for (int s : g_.succs(task)) {
      int to = g_.task(s).device;
      if (to == d) {
        ready_one(s, t);
        continue;
      }
      const CommModel& c = o_.comm;
      double wire = std::isinf(c.bandwidth_Bps) ? 0 : c.message_bytes / c.bandwidth_Bps;
      double& link = link_free_[static_cast<size_t>(d) * h_.devices() + to];
      double begin = c.serialize_links ? std::max(t, link) : t;
      double extra = c.extra ? c.extra(task, s) : 0;
      if (c.serialize_links) link = begin + wire;
      double arrive_at = begin + wire + c.latency_s + extra;
      if (!c.overlap) sender_free = std::max(sender_free, begin + wire);
      if (arrive_at <= t) ready_one(s, t);
      else push(arrive_at, s, Event::Arrival);
    }
    if (!due_[d].empty()) {
      start_updates(d, sender_free);  // after its sends, before its next pass
    } else if (sender_free > t) {
      // The sender is busy pushing bytes: it becomes idle later.
      busy_until_[d] = sender_free;
      push(sender_free, d, Event::Release);
    } else {
      idle_[d] = 1;
      touch(d);
    }
  }

  void release(int d, double t) {
    if (!due_[d].empty()) return start_updates(d, t);
    idle_[d] = 1;
    touch(d);
  }

  // Stage update `u` is due (UpdateHolds::completed). A stage with several
  // holders first reduces the group's gradients over the link (SimOptions::
  // update_group), the devices computing meanwhile.
  void update_due(int u, double t) {
    const int s = holds_.stage_of(u), n = static_cast<int>(holders_[s].size());
    if (group_reduce_ && n > 1) {
      const double r = reduce_s(s, n);
      reduced_until_ = std::max(reduced_until_, t + r);
      if (r > 0) {
        push(t + r, u, Event::Reduced);
        return;
      }
    }
    apply_update(u, t);
  }

  // The update on every device that holds the stage, now if it is idle,
  // else when its current pass and sends end. With update_s 0 it releases
  // its held tasks at once.
  void apply_update(int u, double t) {
    if (o_.update_s <= 0) {
      for (int h : holds_.held(u)) ready_one(h, t);
      return;
    }
    const auto& hs = holders_[holds_.stage_of(u)];
    holders_left_[u] = static_cast<int>(hs.size());
    for (int d : hs) {
      due_[d].push_back(u);
      if (idle_[d]) start_updates(d, t);
    }
  }

  void start_updates(int d, double t) {
    const double len = o_.update_s * static_cast<double>(due_[d].size());
    idle_[d] = 0;
    r_.busy[d] += len;
    busy_until_[d] = t + len;
    double at = t;
    for (int u : due_[d]) {
      r_.updates.push_back({d, u, at, at + o_.update_s});
      at += o_.update_s;
    }
    running_updates_[d].insert(running_updates_[d].end(), due_[d].begin(), due_[d].end());
    due_[d].clear();
    push(t + len, d, Event::UpdateDone);
  }

  void update_done(int d, double t) {
    for (int u : running_updates_[d])
      if (--holders_left_[u] == 0)
        for (int h : holds_.held(u)) ready_one(h, t);
    running_updates_[d].clear();
    release(d, t);
  }

  void ready_one(int task, double t) {
    if (--missing_[task] == 0) {
      arb_.on_ready(task, t);
      touch(g_.task(task).device);
    }
  }

  // Stages held by several devices (Chimera's two directions, data-parallel
  // replicas) all-reduce their weight gradients once every copy has
  // finished its passes; after the graph (CommModel::mirror_after_graph)
  // once every task has, one stage after another as the trainer's blocking
  // exchanges run them, each when its holders' previous one is done.
  void replica_allreduce() {
    const PipelineSpec& sp = g_.spec();
    if (sp.pipelines() < 2 || group_reduce_) return;  // group_reduce_: update_due reduced each group
    const CommModel& c = o_.comm;
    double graph_end = 0;
    for (double e : r_.end) graph_end = std::max(graph_end, e);
    std::vector<double> exchanged(h_.devices(), graph_end);  // after the graph: each holder's last exchange
    for (int i = 0; i < sp.stages; ++i) {
      const int s = c.mirror_after_graph ? sp.stages - 1 - i : i;  // the trainer's mirror order
      std::set<int> holders;
      for (int p = 0; p < sp.pipelines(); ++p) holders.insert(sp.placement[p][s]);
      if (holders.size() < 2) continue;
      double last = 0;
      if (c.mirror_after_graph)
        for (int d : holders) last = std::max(last, exchanged[d]);
      for (int m = 0; m < sp.microbatches && !c.mirror_after_graph; ++m)
        for (Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW})
          if (int id = g_.find(k, s, m); id >= 0) last = std::max(last, r_.end[id]);
      double done = last + reduce_s(s, static_cast<int>(holders.size()));
      for (int d : holders) exchanged[d] = done;
      // The stage's last update applies the reduced gradients: after the
      // reduction, not beside it (run() charged its time already).
      if (o_.update_s > 0) done += o_.update_s;
      for (int d : holders) busy_until_[d] = std::max(busy_until_[d], done);
    }
  }

  // Stage s's gradient reduction between its n holders. Two copies swap
  // their sums (one latency, the bytes once); more (data-parallel
  // replicas) run a ring all-reduce: 2(n-1) steps of 1/n of the bytes each.
  double reduce_s(int s, int n) const {
    const CommModel& c = o_.comm;
    const double steps = n == 2 ? 1 : 2.0 * (n - 1), share = n == 2 ? 1 : 2.0 * (n - 1) / n;
    const double bytes = o_.memory.weight_bytes.empty() ? 1.0 : o_.memory.weight_bytes[s];
    const double wire = std::isinf(c.bandwidth_Bps) ? 0 : share * bytes / c.bandwidth_Bps;
    return steps * c.latency_s + wire;
  }

  void weights() {
    const PipelineSpec& sp = g_.spec();
    r_.weight_bytes.assign(h_.devices(), 0);
    std::set<std::pair<int, int>> seen;  // (device, stage) copies
    for (int p = 0; p < sp.pipelines(); ++p)
      for (int s = 0; s < sp.stages; ++s) {
        int d = sp.placement[p][s];
        if (seen.insert({d, s}).second)
          r_.weight_bytes[d] += o_.memory.weight_bytes.empty() ? 1.0 : o_.memory.weight_bytes[s];
      }
  }

  const Hint& h_;
  const TaskGraph& g_;
  const SimOptions& o_;
  Arbiter arb_;
  SimResult r_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  long long seq_ = 0;
  std::vector<int> missing_, touched_;
  UpdateHolds holds_;  // SimOptions::update_group / gate_lag
  // Update groups reduce a replicated stage's gradients each (update_due),
  // not once after the graph (replica_allreduce), unless mirror_after_graph
  // (reads o_, declared above).
  const bool group_reduce_ = o_.update_group > 0 && !o_.comm.mirror_after_graph;
  double reduced_until_ = 0;
  // Updates (SimOptions::update_s): due and running per device, holders
  // per stage, holders still updating per update.
  std::vector<std::vector<int>> due_, running_updates_, holders_;
  std::map<int, int> holders_left_;
  std::vector<unsigned char> idle_;
  std::uint64_t shuffle_state_ = o_.tie_shuffle_seed;
  std::vector<double> busy_until_, held_act_, link_free_, wake_pending_;
};

}  // namespace

SimResult simulate(const Hint& hint, const SimOptions& opt) { return Sim(hint, opt).run(); }

}  // namespace rrfp
