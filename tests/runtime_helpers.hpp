// Shared checks for the StarPU runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "hints/generators.hpp"
#include "runtime/executor.hpp"

namespace rrfp::testing {

// Chooses the policy the way users do: through STARPU_SCHED.
inline void use_policy(const std::string& name) { setenv("STARPU_SCHED", name.c_str(), 1); }

inline std::function<void(int)> sleep_body(const Hint& h, double unit_ms) {
  return [&h, unit_ms](int id) {
    double units = h.graph->task(id).kind == Kind::BW ? 2 : 1;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(units * unit_ms));
  };
}

// Every task ran exactly once on its device's worker, and after its inputs.
inline void expect_valid_run(const Hint& h, const ExecResult& r, const std::string& what) {
  const TaskGraph& g = *h.graph;
  ASSERT_EQ(static_cast<int>(r.order.size()), h.devices()) << what;
  for (int d = 0; d < h.devices(); ++d) {
    auto a = r.order[d], b = h.order[d];
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << what << ": device " << d << " did not run each of its tasks exactly once";
  }
  for (int id = 0; id < g.size(); ++id) {
    EXPECT_EQ(r.worker[id], r.device_worker[g.task(id).device]) << what << ": " << g.label(id) << " on the wrong worker";
    for (int p : g.preds(id))
      EXPECT_GE(r.start_s[id], r.end_s[p]) << what << ": " << g.label(id) << " started before " << g.label(p) << " ended";
  }
}

inline void expect_within_cap(const ExecResult& r, const std::string& what) {
  for (size_t d = 0; d < r.peak_inflight.size(); ++d)
    EXPECT_LE(r.peak_inflight[d], r.inflight_cap[d]) << what << ": device " << d << " over its in-flight cap";
}

}  // namespace rrfp::testing
