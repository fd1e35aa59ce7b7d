// One StarPU instance at a time, initialised with a chosen policy and shut
// down when the session ends. Tests and benches switch policies by ending one
// session and starting another.
#pragma once

#include "sched/policy_registry.hpp"

namespace rrfp {

// StarPU from Debian has at most this many CPU workers (STARPU_MAXCPUS).
int max_cpu_workers();

class StarpuSession {
 public:
  // `ncpus` CPU workers, no accelerators. Throws SpecError when StarPU
  // cannot start that many workers or a session is already open.
  StarpuSession(const PolicyChoice& policy, int ncpus, bool profiling);
  ~StarpuSession();
  StarpuSession(const StarpuSession&) = delete;
  StarpuSession& operator=(const StarpuSession&) = delete;

  const PolicyChoice& policy() const { return policy_; }
  // StarPU worker id of the CPU worker that plays device d.
  int worker_of_device(int d) const;

 private:
  PolicyChoice policy_;
  int ncpus_;
};

}  // namespace rrfp
