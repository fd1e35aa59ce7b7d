// StarPU adapters around the arbitration core: the `rrfp` (readiness-first),
// `rrfp-wait` (readiness-first with bounded waits for the hint's preferred
// task) and `rrfp-fixed` (strict order) scheduling policies. Their state lives on
// the scheduling context (init_sched / deinit_sched); a run's configuration
// reaches them through the C API of sched/rrfp_sched.h.
//
// Tensor parallelism (rrfp_sched_config::tp = T > 1): every graph task runs
// as T member tasks, member t of device d on worker slot d*T+t. Member 0 (the
// leader) is arbitrated as usual; at each take() its decision is appended to
// the follow queue of every other member of the group, and a follower runs
// only the head of its queue. So all members start their tasks, and enter
// the collectives inside them, in the leader's order. A follower on another
// MPI rank gets the decisions by message (rrfp_sched_follow).
#pragma once

#include <starpu.h>

#include "sched/arbiter.hpp"
#include "sched/rrfp_sched.h"

namespace rrfp {

starpu_sched_policy* rrfp_policy();        // "rrfp"
starpu_sched_policy* rrfp_fixed_policy();  // "rrfp-fixed"
starpu_sched_policy* rrfp_wait_policy();   // "rrfp-wait" (bounded wait)

}  // namespace rrfp
