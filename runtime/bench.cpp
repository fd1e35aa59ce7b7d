#include "runtime/bench.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "runtime/payload.hpp"

namespace rrfp {

void sleep_for_seconds(double seconds) {
  // Linux lets a sleeping thread wake up to 50 us late (timer slack); a task
  // of 1-2 ms would run a few percent long, every time. Ask for 1 ns.
  thread_local bool slack_set = (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0), true);
  (void)slack_set;
  // sleep_until a deadline: oversleeping one call does not shorten the next.
  auto until = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  std::this_thread::sleep_until(until);
}

namespace {

// The performance models' workload: what sets a synthetic pass's mean
// duration (unit, base and per-stage costs, a replayed trace, a straggler),
// not a lognormal or multimodal variability, whose factors have mean one.
std::uint32_t cost_workload_key(const CostOptions& c) {
  std::string key = fmt::format("bench|{}|{},{},{},{}|", c.unit_ms, c.base.f, c.base.b, c.base.w, c.base.bw);
  if (c.var.type == Variability::Type::Straggler) key += c.var.spec + "|";
  for (const BaseCost& s : c.stage_base) key += fmt::format("{},{},{},{};", s.f, s.b, s.w, s.bw);
  if (c.durations) key += c.durations->source;
  return workload_key_of(key);
}

}  // namespace

BenchReport run_bench(const Hint& hint, const BenchConfig& cfg) {
  if (cfg.iterations < 1) throw SpecError("--iterations must be at least 1");
  if (cfg.check_decisions) {
    if (cfg.exec.tensor_parallel > 1) throw SpecError("--check-sim: runs with tensor parallelism are not replayed");
    if (!cfg.exec.inflight_cap.empty()) throw SpecError("--check-sim: per-device in-flight caps are not replayed");
  }
  const TaskGraph& g = *hint.graph;
  const int D = hint.devices();
  BenchReport rep;
  std::atomic<long> checked{0};
  rep.message_bytes = cfg.exec.message_bytes;
  rep.hint = hint.name;
  rep.variability = variability_label(cfg.cost);
  rep.stages = g.spec().stages;
  rep.devices = D;
  rep.microbatches = g.spec().microbatches;
  rep.seed = cfg.cost.seed;
  rep.tasks = g.size();
  rep.iterations = cfg.iterations;
  rep.busy_s.assign(D, 0);
  rep.peak_inflight.assign(D, 0);
  const int T = cfg.exec.tensor_parallel, n = g.size();
  rep.tensor_parallel = T;
  std::shared_ptr<TpComm> comm = cfg.comm;
  if (T > 1 && !comm) comm = std::make_shared<LocalTpComm>(D, T, std::max(10.0, cfg.exec.stall_timeout_s));
  for (int it = 0; it < cfg.iterations; ++it) {
    CostOptions c = cfg.cost;
    c.seed = cfg.cost.seed + static_cast<std::uint64_t>(it);
    Durations d = draw(g, c);
    Durations per_member = d;  // with tensor parallelism each member does 1/T of a task
    for (double& x : per_member.task_s) x /= T;
    LowerBound lb = lower_bound(g, per_member);
    ExecOptions o = cfg.exec;
    if (o.workload_key == 0) o.workload_key = cost_workload_key(cfg.cost);
    o.iteration = it;
    if (c.link_ms > 0) o.link_delay_s = [&d](int id, int k) { return d.edge(id, k); };
    // The message this task reads was written by its producer (F: the
    // previous stage's F; a backward: the next stage's backward).
    auto producer = [&](int id) {
      const Task& t = g.task(id);
      return t.kind == Kind::F ? g.find(Kind::F, t.stage - 1, t.mb) : g.backward_of(t.stage + 1, t.mb);
    };
    auto body = [&](int call, const TaskIo& io) {
      const int id = call % n, member = call / n;
      if (io.stream) {  // a CUDA worker: one kernel checks, writes and holds the stream
        if (!cfg.device_passes) throw std::logic_error("a pass on a CUDA worker, but no BenchConfig::device_passes");
        if (io.in) checked.fetch_add(1, std::memory_order_relaxed);  // verdict read after the run
        const std::uint64_t in_key = io.in ? payload_key(c.seed, producer(id), member) : 0;
        return cfg.device_passes->launch(call, io, d.task_s[call], in_key, payload_key(c.seed, id, member));
      }
      if (io.in) {
        const long bad = check_payload(io.in, io.bytes, payload_key(c.seed, producer(id), member));
        if (bad >= 0)
          throw std::runtime_error(fmt::format("message from {} to {} differs from what was sent at byte {} of {}",
                                               g.label(producer(id)), g.label(id), bad, io.bytes));
        checked.fetch_add(1, std::memory_order_relaxed);
      }
      if (io.out) fill_payload(io.out, io.bytes, payload_key(c.seed, id, member));
      if (T == 1) return sleep_for_seconds(d.task_s[call]);
      const Task& t = g.task(id);
      if (t.kind == Kind::W) return sleep_for_seconds(d.task_s[id] / T);  // no collective in W
      for (int c = 0; c < 2; ++c) {
        sleep_for_seconds(d.task_s[id] / T / 2);
        float buf[kBenchAllreduceFloats];
        for (int i = 0; i < kBenchAllreduceFloats; ++i) buf[i] = static_cast<float>((member + 1) * (i + 1));
        comm->allreduce(t.device, member, collective_id(id, c), buf, kBenchAllreduceFloats);
        for (int i = 0; i < kBenchAllreduceFloats; ++i)
          if (buf[i] != static_cast<float>(T * (T + 1) / 2 * (i + 1)))
            throw std::runtime_error(fmt::format("all-reduce of {} returned a wrong sum", g.label(id)));
      }
    };
    if (comm) comm->clear_log();
    if (cfg.device_passes) cfg.device_passes->reset();
    ExecResult r = cfg.executor ? cfg.executor(hint, body, o) : execute(hint, body, o);
    if (cfg.device_passes) {  // the kernels' checks of every message read
      const std::vector<long long> bad = cfg.device_passes->first_bad_byte();
      for (int id = 0; id < n; ++id)
        if (bad[id] >= 0)
          throw ExecError(fmt::format("message from {} to {} differs from what was sent at byte {} of {}",
                                      g.label(producer(id)), g.label(id), bad[id], o.message_bytes));
    }
    rep.policy = r.policy;
    rep.makespans_s.push_back(r.makespan_s);
    rep.lower_bounds_s.push_back(lb.bound);
    rep.makespan_s += r.makespan_s / cfg.iterations;
    rep.lower_bound_s += lb.bound / cfg.iterations;
    rep.critical_path_s += lb.critical_path / cfg.iterations;
    rep.makespan_over_lb += r.makespan_s / lb.bound / cfg.iterations;
    double busy = 0;
    for (int dev = 0; dev < D; ++dev) {
      rep.busy_s[dev] += r.busy_s[dev] / cfg.iterations;
      rep.peak_inflight[dev] = std::max(rep.peak_inflight[dev], r.peak_inflight[dev]);
      busy += r.busy_s[dev];
    }
    rep.bubble_ratio += (1 - busy / (D * r.makespan_s)) / cfg.iterations;
    rep.inflight_cap = r.inflight_cap;
    rep.waits += r.waits;
    if (cfg.check_decisions) {
      if (r.arb_ready_s.empty())
        throw SpecError(fmt::format("--check-sim needs an rrfp policy (rrfp, rrfp-fixed, rrfp-wait), not {}", r.policy));
      DecisionCheckOptions dc;
      dc.mode = parse_mode(r.policy);
      dc.inflight_slack = cfg.exec.inflight_slack;
      dc.wait = cfg.exec.wait;
      dc.noise_s = cfg.decision_noise_s;
      dc.seed = c.seed;
      const ArbiterTimes seen{r.arb_ready_s, r.arb_ask_s, r.arb_take_s, r.arb_finish_s, r.arb_wait_s};
      rep.decision_checks.push_back(check_decisions(hint, seen, r.order, dc));
    }
    rep.last = std::move(r);
    if (comm) {
      comm->sync_logs();
      auto& logs = rep.collective_logs.emplace_back(D);
      bool same = true;
      for (int dev = 0; dev < D; ++dev) {
        for (int m = 0; m < T; ++m) logs[dev].push_back(comm->log(dev, m));
        for (int m = 1; m < T; ++m) same = same && logs[dev][m] == logs[dev][0];
      }
      rep.collective_orders_identical += same ? 1 : 0;
    }
  }
  rep.messages_checked = checked.load();
  return rep;
}

nlohmann::json to_json(const BenchReport& r) {
  return {{"policy", r.policy},
          {"hint", r.hint},
          {"stages", r.stages},
          {"devices", r.devices},
          {"microbatches", r.microbatches},
          {"seed", r.seed},
          {"variability", r.variability},
          {"tasks", r.tasks},
          {"transfers", r.last.transfers},
          {"message_bytes", r.message_bytes},
          {"messages_checked", r.messages_checked},
          {"data_handles", r.last.data_handles},
          {"explicit_dependencies", r.last.explicit_dependencies},
          {"iterations", r.iterations},
          {"makespan_s", r.makespan_s},
          {"lower_bound_s", r.lower_bound_s},
          {"critical_path_s", r.critical_path_s},
          {"makespan_over_lb", r.makespan_over_lb},
          {"bubble_ratio", r.bubble_ratio},
          {"busy_s", r.busy_s},
          {"peak_inflight", r.peak_inflight},
          {"inflight_cap", r.inflight_cap},
          {"waits", r.waits},
          {"makespans_s", r.makespans_s},
          {"lower_bounds_s", r.lower_bounds_s},
          {"tensor_parallel", r.tensor_parallel},
          {"collective_orders_identical", r.collective_orders_identical},
          {"decision_checks", decision_checks_json(r)}};
}

nlohmann::json decision_checks_json(const BenchReport& r) {
  nlohmann::json a = nlohmann::json::array();
  for (const DecisionCheck& c : r.decision_checks)
    a.push_back({{"decisions", c.decisions},
                 {"exact", c.exact},
                 {"agrees", c.agrees()},
                 {"draws", c.draws},
                 {"draws_matching", c.draws_matching},
                 {"late_workers", c.late_workers},
                 {"pinned", c.pinned},
                 {"noise_s", c.noise_s}});
  return a;
}

nlohmann::json collective_logs_json(const Hint& hint, const BenchReport& r) {
  // [iteration][group][member] -> ["1F3#0", "1F3#1", ...]
  nlohmann::json all = nlohmann::json::array();
  for (const auto& it : r.collective_logs) {
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& members : it) {
      nlohmann::json ms = nlohmann::json::array();
      for (const auto& log : members) {
        nlohmann::json names = nlohmann::json::array();
        for (std::int64_t id : log) names.push_back(collective_name(hint.graph->label(collective_task(id)), id));
        ms.push_back(std::move(names));
      }
      groups.push_back(std::move(ms));
    }
    all.push_back(std::move(groups));
  }
  return all;
}

Timeline to_timeline(const Hint& hint, const ExecResult& r, const std::string& title) {
  Timeline t;
  t.title = title;
  for (int d = 0; d < r.devices; ++d) t.tracks.push_back(fmt::format("device {} (worker {})", d, r.device_worker[d]));
  const bool prof = !r.prof_start_s.empty();
  for (int id = 0; id < hint.graph->size(); ++id) {
    Slice s;
    s.track = hint.graph->task(id).device;
    s.name = hint.graph->label(id);
    s.start_s = prof && r.prof_start_s[id] >= 0 ? r.prof_start_s[id] : r.start_s[id];
    s.end_s = prof && r.prof_end_s[id] >= 0 ? r.prof_end_s[id] : r.end_s[id];
    t.slices.push_back(s);
  }
  return t;
}

}  // namespace rrfp
