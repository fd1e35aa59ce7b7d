#include "runtime/executor.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <starpu.h>

#include "runtime/graph_run.hpp"
#include "runtime/run_plan.hpp"
#include "runtime/run_stats.hpp"
#include "runtime/session.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {

void prepare_session(const Hint& hint, const ExecOptions& opt) {
  const int slots = hint.devices() * opt.tensor_parallel;
  if (opt.cuda || slots <= max_cpu_workers())
    StarpuSession::reuse(resolve_policy(opt.policy), slots, opt.profile, opt.cuda).init_workers_once(opt.worker_init);
}

std::vector<int> cuda_devices_of(const Hint& hint, const ExecOptions& opt) {
  if (!opt.cuda) throw SpecError("cuda_devices_of needs ExecOptions::cuda");
  const int slots = hint.devices() * opt.tensor_parallel;
  StarpuSession& s = StarpuSession::reuse(resolve_policy(opt.policy), slots, opt.profile, true);
  std::vector<int> out;
  for (int d = 0; d < hint.devices(); ++d) out.push_back(starpu_worker_get_devid(s.worker_of_device(d * opt.tensor_parallel)));
  return out;
}

ExecResult execute(const Hint& hint, const std::function<void(int)>& body, const ExecOptions& opt) {
  const TaskBody io_body = [&body](int call, const TaskIo&) { body(call); };
  return execute(hint, io_body, opt);
}

ExecResult execute(const Hint& hint, const TaskBody& body, const ExecOptions& opt) {
  const TaskGraph& g = *hint.graph;
  const int n = g.size(), D = hint.devices(), T = opt.tensor_parallel;
  RunPlan plan = plan_run(hint, opt);
  const PolicyChoice& choice = plan.choice;
  if (!opt.cuda && D * T > max_cpu_workers())
    throw SpecError(fmt::format("the hint needs {} devices{} but StarPU here has at most {} CPU workers", D * T,
                                T > 1 ? fmt::format(" ({} x {} tensor-parallel)", D, T) : "", max_cpu_workers()));

  StarpuSession& session = StarpuSession::reuse(choice, D * T, opt.profile, opt.cuda);
  session.init_workers_once(opt.worker_init);
  ExecResult res;
  res.policy = choice.name;
  res.devices = D;
  res.tasks = n;
  res.tensor_parallel = T;
  // Slot d*T+t is member t of device d; T = 1: slot = device.
  for (int slot = 0; slot < D * T; ++slot) res.member_worker.push_back(session.worker_of_device(slot));
  for (int d = 0; d < D; ++d) res.device_worker.push_back(res.member_worker[d * T]);

  GraphRunSpec spec(hint, body, opt, plan, RankLayout{0, 1, D * T, nullptr});
  spec.worker_of_slot = res.member_worker;
  GraphRunOutcome out;
  try {
    out = run_graph(spec);
  } catch (const UnrecoverableError&) {
    StarpuSession::abandon();  // tasks are stuck in StarPU: it cannot shut down
    throw;
  } catch (const ExecError&) {
    StarpuSession::close_reused();  // a drained run leaves nothing worth keeping
    throw;
  }
  // StarPU's workerorder counter lives as long as the session and must grow
  // across runs, so a static-order run does not leave its session for the next.
  if (choice.kind == PolicyChoice::Kind::StaticOrder) StarpuSession::close_reused();
  const RunState& run = *out.run;
  res.wall_s = out.wall_s;
  res.transfers = out.transfers;
  res.data_handles = out.data_handles;
  if (opt.profile) {
    double t0 = 1e300;
    for (int id = 0; id < n; ++id)
      if (run.prof_start[id] >= 0) t0 = std::min(t0, run.prof_start[id]);
    res.prof_start_s.assign(n, -1);
    res.prof_end_s.assign(n, -1);
    for (int id = 0; id < n; ++id)
      if (run.prof_start[id] >= 0) {
        res.prof_start_s[id] = (run.prof_start[id] - t0) * 1e-6;
        res.prof_end_s[id] = (run.prof_end[id] - t0) * 1e-6;
      }
  }
  // The leader's times stand for the task (the arbiter counts in-flight
  // work on the leader; followers trail it by a collective's wake-up).
  res.start_s.assign(run.start.begin(), run.start.begin() + n);
  res.end_s.assign(run.end.begin(), run.end.begin() + n);
  res.worker.assign(run.worker.begin(), run.worker.begin() + n);
  if (opt.stage_epilogue) {
    res.epilogue_worker = run.epi_worker;
    res.epilogue_start_s = run.epi_start;
    res.epilogue_end_s = run.epi_end;
  }
  res.order.resize(D);
  for (int d = 0; d < D; ++d) res.order[d] = run.by_worker[res.device_worker[d]];
  for (int slot = 0; slot < D * T; ++slot) res.member_order.push_back(run.by_worker[res.member_worker[slot]]);
  res.inflight_cap = plan.inflight_caps(hint, opt);
  res.waits = plan.arb ? plan.arb->waits() : 0;
  if (plan.arb) {
    double origin = 0;
    bool first = true;
    for (double t : plan.arb->ready_times())
      if (t >= 0 && (first || t < origin)) origin = t, first = false;
    auto from_origin = [origin](std::vector<double> v) {
      for (double& x : v) x = x < 0 ? -1 : x - origin;
      return v;
    };
    res.arb_ready_s = from_origin(plan.arb->ready_times());
    res.arb_ask_s = from_origin(plan.arb->ask_times());
    res.arb_take_s = from_origin(plan.arb->take_times());
    res.arb_finish_s = from_origin(plan.arb->finish_times());
    res.arb_wait_s = from_origin(plan.arb->wait_times());
  }
  fill_run_stats(g, res);
  return res;
}

}  // namespace rrfp
