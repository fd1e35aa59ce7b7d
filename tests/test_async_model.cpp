// PACI in the simulator (sim/async_model.hpp): no flush means a shorter
// step and a smaller bubble within 1F1B's in-flight caps, the update's cost
// lengthens the step, and bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/pipeline_spec.hpp"
#include "sim/async_model.hpp"

namespace rrfp {

TEST(AsyncModel, NoFlushShortensTheStepAtTheSameInflightPeak) {
  for (int P : {4, 8, 16}) {
    Scenario sc;
    const AsyncEstimate e = simulate_paci(P, 4, 8, sc, 0);
    EXPECT_LT(e.async_step_s, e.sync_step_s) << P;
    EXPECT_LT(e.async_bubble, e.sync_bubble) << P;
    // 1F1B's caps: P - s in flight on device s, fewer when a step has fewer microbatches.
    EXPECT_EQ(e.async_peak_inflight, P) << P;
    EXPECT_EQ(e.sync_peak_inflight, std::min(P, 4)) << P;
    // The flush costs (P - 1) of M + P - 1 slots: deeper pipelines gain more.
    if (P == 16) {
      EXPECT_GT(e.sync_step_s / e.async_step_s, 2.0);
    }
  }
}

TEST(AsyncModel, TheUpdateLengthensBothSteps) {
  Scenario sc;
  const AsyncEstimate free = simulate_paci(4, 4, 4, sc, 0), paid = simulate_paci(4, 4, 4, sc, 0.01);
  EXPECT_GE(paid.sync_step_s, free.sync_step_s + 0.01 - 1e-12);
  EXPECT_GT(paid.async_step_s, free.async_step_s);
}

TEST(AsyncModel, BadInputIsRefused) {
  Scenario sc;
  EXPECT_THROW(simulate_paci(0, 4, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 0, 4, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 0, sc, 0), SpecError);
  EXPECT_THROW(simulate_paci(4, 4, 4, sc, -1), SpecError);
}

}  // namespace rrfp
