#include "runtime/run_plan.hpp"

#include <fmt/format.h>

#include "hints/replay.hpp"

namespace rrfp {

namespace {

Mode arbiter_mode(PolicyChoice::Kind k) {
  if (k == PolicyChoice::Kind::RrfpFixed) return Mode::Strict;
  if (k == PolicyChoice::Kind::RrfpWait) return Mode::BoundedWait;
  return Mode::ReadinessFirst;
}

}  // namespace

RunPlan plan_run(const Hint& hint, const ExecOptions& opt, std::vector<unsigned char> local) {
  const int T = opt.tensor_parallel;
  if (hint.spec().microbatches < 1) throw SpecError("a run needs at least one microbatch");
  if (T < 1) throw SpecError(fmt::format("--tensor-parallel must be at least 1 (got {})", T));
  RunPlan p;
  p.choice = resolve_policy(opt.policy);
  if (T > 1 && !p.choice.uses_arbiter() && p.choice.kind != PolicyChoice::Kind::StaticOrder)
    throw SpecError(fmt::format("--tensor-parallel {} needs a policy that keeps a tensor-parallel group's collectives "
                                "in one order on every member: rrfp-wait, rrfp, rrfp-fixed or static-order (not '{}')",
                                T, p.choice.name));
  if (opt.inflight_slack < 0) throw SpecError(fmt::format("in-flight slack must not be negative (got {})", opt.inflight_slack));
  p.slack = opt.inflight_slack;
  if (p.choice.kind == PolicyChoice::Kind::StaticOrder) {
    // StarPU's workerorder waits forever on an order that cannot run; say so
    // up front (whether a strict order deadlocks does not depend on costs).
    ReplayResult rr = replay_unit(hint);
    if (!rr.complete)
      throw ExecError(fmt::format("static-order: hint '{}' cannot run in strict order:\n{}", hint.name, rr.stuck));
  }
  if (!opt.memory_budget.device_bytes.empty() && !p.choice.uses_arbiter())
    throw SpecError(fmt::format("a memory budget per device is enforced by the rrfp policies only, not by '{}'",
                                p.choice.name));
  if (p.choice.uses_arbiter())
    p.arb = std::make_unique<Arbiter>(hint, ArbiterOptions{arbiter_mode(p.choice.kind), p.slack, opt.inflight_cap,
                                                           std::move(local), opt.wait,
                                                           opt.memory_budget});
  return p;
}

std::vector<int> RunPlan::inflight_caps(const Hint& hint, const ExecOptions& opt) const {
  const auto peak = hint.peak_inflight();
  std::vector<int> caps(hint.devices());
  for (int d = 0; d < hint.devices(); ++d)
    caps[d] = arb ? arb->cap(d) : (opt.inflight_cap.empty() ? peak[d] + slack : opt.inflight_cap[d]);
  return caps;
}

}  // namespace rrfp
