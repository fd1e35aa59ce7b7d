// What execute() and the MPI executor decide before any StarPU work, in the
// same way: the policy (with tensor parallelism, one that keeps every
// member's collectives in one order), that a static-order hint can run at
// all, the in-flight slack, and the arbiter of the rrfp policies.
#pragma once

#include <memory>
#include <vector>

#include "hints/hint.hpp"
#include "runtime/executor.hpp"
#include "sched/arbiter.hpp"
#include "sched/policy_registry.hpp"

namespace rrfp {

struct RunPlan {
  PolicyChoice choice;
  int slack = 0;
  std::unique_ptr<Arbiter> arb;  // rrfp and rrfp-fixed only

  // Per device: the in-flight cap of the run (enforced by the arbiter only).
  std::vector<int> inflight_caps(const Hint& hint, const ExecOptions& opt) const;
};

// Throws SpecError for a bad configuration and ExecError for a static-order
// hint that cannot run in strict order. `local`: per device, 1 where this
// process arbitrates it (multi-rank runs); empty = every device.
RunPlan plan_run(const Hint& hint, const ExecOptions& opt, std::vector<unsigned char> local = {});

}  // namespace rrfp
