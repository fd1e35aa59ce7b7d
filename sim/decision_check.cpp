#include "sim/decision_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "codelets/splitmix.hpp"
#include "sim/simulator.hpp"

namespace rrfp {

namespace {

void check_sizes(const Hint& hint, const ArbiterTimes& t, const std::vector<std::vector<int>>& order) {
  const TaskGraph& g = *hint.graph;
  const size_t n = g.size();
  if (t.ready.size() != n || t.ask.size() != n || t.take.size() != n || t.finish.size() != n)
    throw SpecError(fmt::format("decision check: {} ready, {} ask, {} take and {} finish times for a graph of {} tasks",
                                t.ready.size(), t.ask.size(), t.take.size(), t.finish.size(), n));
  if (order.size() != static_cast<size_t>(hint.devices()))
    throw SpecError(fmt::format("decision check: orders of {} devices for a hint on {}", order.size(), hint.devices()));
  size_t total = 0;
  for (const auto& o : order) {
    for (int id : o)
      if (id < 0 || static_cast<size_t>(id) >= n) throw SpecError(fmt::format("decision check: task id {} out of range", id));
    total += o.size();
  }
  if (total != n) throw SpecError(fmt::format("decision check: the orders hold {} tasks, the graph {}", total, n));
  if (!t.wait.empty() && t.wait.size() != n)
    throw SpecError(fmt::format("decision check: {} wait times for a graph of {} tasks", t.wait.size(), n));
  for (size_t id = 0; id < n; ++id)
    if (!(t.ready[id] >= 0 && t.ask[id] >= 0 && t.take[id] >= std::max(t.ready[id], t.ask[id]) &&
          t.finish[id] >= t.take[id]))
      throw SpecError(fmt::format("decision check: {} has no consistent ready, ask, take and finish times",
                                  g.label(static_cast<int>(id))));
}

// The first position where one device's simulated order differs from its
// recorded one, or -1.
int first_difference(const std::vector<int>& rec, const std::vector<int>& sim) {
  const size_t len = std::max(rec.size(), sim.size());
  for (size_t i = 0; i < len; ++i)
    if ((i < rec.size() ? rec[i] : -1) != (i < sim.size() ? sim[i] : -1)) return static_cast<int>(i);
  return -1;
}

bool same_orders(const std::vector<std::vector<int>>& rec, const std::vector<std::vector<int>>& sim) {
  for (size_t d = 0; d < rec.size(); ++d)
    if (first_difference(rec[d], sim[d]) >= 0) return false;
  return true;
}

}  // namespace

double dispatch_delay_s(const Hint& hint, const ArbiterTimes& t, const std::vector<std::vector<int>>& order,
                        double quantile) {
  check_sizes(hint, t, order);
  std::vector<double> late(t.take.size());
  for (size_t id = 0; id < late.size(); ++id) late[id] = t.take[id] - std::max(t.ask[id], t.ready[id]);
  if (late.empty()) return 0;
  const size_t k = std::min(late.size() - 1, static_cast<size_t>(std::floor(quantile * (late.size() - 1))));
  std::nth_element(late.begin(), late.begin() + static_cast<long>(k), late.end());
  return late[k];
}

DecisionCheck check_decisions(const Hint& hint, const ArbiterTimes& t, const std::vector<std::vector<int>>& order,
                              const DecisionCheckOptions& opt) {
  check_sizes(hint, t, order);
  if (opt.draws < 0) throw SpecError("decision check: draws must be >= 0");
  const int n = hint.graph->size();
  DecisionCheck c;
  c.decisions = n;
  c.draws = opt.draws;
  c.noise_s = opt.noise_s >= 0 ? opt.noise_s : dispatch_delay_s(hint, t, order);
  std::vector<double> late(n, 0);  // perturbations of the finishes
  auto waited_at = [&](int id) { return t.wait.empty() ? -1.0 : t.wait[id]; };
  SimOptions so;
  so.mode = opt.mode;
  so.inflight_slack = opt.inflight_slack;
  so.wait = opt.wait;
  so.end_at = [&](int id, double start) { return std::max(start, t.finish[id] + late[id]); };
  // A device starts asking when its worker did, after the task before.
  so.ask_delay = [&](int d, int started) {
    if (started <= 0 || started >= static_cast<int>(order[d].size())) return 0.0;
    return t.ask[order[d][started]] - t.finish[order[d][started - 1]];
  };
  // A message crossing devices arrives when its consumer became ready;
  // tasks without inputs are ready when they were submitted.
  so.comm.serialize_links = false;
  so.comm.extra = [&](int from, int to) { return std::max(0.0, t.ready[to] - t.finish[from]); };
  so.source_ready = [&](int id) { return t.ready[id]; };
  // (device, position) -> the recorded take: workers found late.
  std::map<std::pair<int, int>, double> holds;
  so.hold_until = [&](int d, int started, double) {
    const auto it = holds.find({d, started});
    return it == holds.end() ? 0.0 : it->second;
  };
  // Replays until the orders agree, or differ where no late worker explains
  // it (that difference into `where`).
  auto agrees = [&](DecisionCheck& where) {
    for (;;) {
      SimResult r = simulate(hint, so);
      if (!r.complete) throw std::logic_error("decision check: the replay did not complete: " + r.stuck);
      // The difference the replay reached first, in simulated time.
      int dev = -1, pos = -1;
      double first_t = std::numeric_limits<double>::infinity();
      for (size_t d = 0; d < order.size(); ++d) {
        const int i = first_difference(order[d], r.executed[d]);
        if (i < 0) continue;
        const bool ran = i < static_cast<int>(r.executed[d].size());
        const double at = ran ? r.start[r.executed[d][i]] : std::numeric_limits<double>::infinity();
        if (dev < 0 || at < first_t) dev = static_cast<int>(d), pos = i, first_t = at;
      }
      if (dev < 0) return true;
      const auto& rec = order[dev];
      const auto& sim = r.executed[dev];
      where.device = dev, where.position = pos;
      where.recorded = pos < static_cast<int>(rec.size()) ? rec[pos] : -1;
      where.simulated = pos < static_cast<int>(sim.size()) ? sim[pos] : -1;
      const int id = where.recorded;
      const auto key = std::make_pair(dev, pos);
      if (id < 0 || waited_at(id) >= 0 || holds.count(key) || !(t.take[id] > first_t + c.noise_s)) return false;
      holds[key] = t.take[id];
    }
  };
  c.exact = agrees(c);
  c.late_workers = static_cast<int>(holds.size());
  const auto found = holds;
  // Pinned: the arbiter is asked for each task when the run's took it, and
  // where the run decided a bounded wait first, also when it decided that
  // (the wait is decided again; a worker late to give up is late here too).
  {
    SimOptions pinned = so;
    pinned.hold_until = [&](int d, int started, double now) {
      if (started >= static_cast<int>(order[d].size())) return 0.0;
      const int id = order[d][started];
      return waited_at(id) >= now ? waited_at(id) : t.take[id];
    };
    SimResult r = simulate(hint, pinned);
    c.pinned = r.complete && same_orders(order, r.executed);
  }
  std::uint64_t rng = opt.seed;
  DecisionCheck ignored;
  for (int k = 0; k < opt.draws; ++k) {
    so.tie_shuffle_seed = splitmix64_next(rng) | 1;
    for (double& x : late) x = c.noise_s * static_cast<double>(splitmix64_next(rng) >> 11) * 0x1p-53;
    holds = found;
    if (agrees(ignored)) ++c.draws_matching;
  }
  return c;
}

std::string DecisionCheck::describe(const TaskGraph& g) const {
  std::string s = fmt::format(
      "{} decisions: the replay {} ({} late workers held); {} of {} replays perturbed by up to {:.3f} ms agree; the "
      "pinned replay {}",
      decisions, exact ? "agrees" : "differs", late_workers, draws_matching, draws, noise_s * 1e3,
      pinned ? "agrees" : "differs");
  if (device >= 0)
    s += fmt::format(" (first difference: device {}, position {}: recorded {}, simulated {})", device, position,
                     recorded >= 0 ? g.label(recorded) : "nothing", simulated >= 0 ? g.label(simulated) : "nothing");
  return s;
}

}  // namespace rrfp
