// The simulator decides what the StarPU policies decide: real StarPU runs of
// the synthetic bench (random durations), each iteration replayed in the
// simulator from what the policy's arbiter saw (sim/decision_check.hpp),
// orders compared device by device.
//   pinned: every take at its recorded instant; the choices must be equal
//           in every iteration, for every policy.
//   free:   the simulator's own timing from the recorded durations and
//           arrivals (late workers held). rrfp and rrfp-fixed must agree in
//           at least half the iterations: alone they agree in all, but with
//           the whole suite running beside them a worker late by less than
//           the hold threshold can flip a race the perturbed replays miss
//           (a policy deciding otherwise fails nearly every iteration);
//           rrfp-wait's rate is printed (a wait's deadline rests on which
//           of two devices asked first, microseconds apart:
//           docs/simulator.md).
#include <fmt/format.h>

#include "runtime/bench.hpp"
#include "tests/runtime_helpers.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

constexpr int kIterations = 4;

std::vector<Hint> hints() {
  return {make_hint("1f1b", {4, 8, 0, 0, 0}), make_hint("zb-h1", {4, 8, 0, -1, 0}),
          make_hint("interleaved-1f1b", {4, 8, 2, -1, 0})};
}

void expect_agreement(const std::string& policy, bool free_must_agree) {
  for (const Hint& h : hints()) {
    BenchConfig cfg;
    cfg.cost.unit_ms = 3;
    cfg.cost.var = parse_variability("lognormal:0.5");
    cfg.cost.seed = 101;
    cfg.iterations = kIterations;
    cfg.exec.policy = policy;
    cfg.check_decisions = true;
    BenchReport rep = run_bench(h, cfg);
    ASSERT_EQ(static_cast<int>(rep.decision_checks.size()), kIterations);
    int agree = 0;
    for (int i = 0; i < kIterations; ++i) {
      const DecisionCheck& d = rep.decision_checks[i];
      const std::string what = fmt::format("{} {} iteration {}: {}", policy, h.name, i, d.describe(*h.graph));
      EXPECT_EQ(d.decisions, h.graph->size()) << what;
      EXPECT_TRUE(d.pinned) << what;
      agree += d.agrees();
      if (!d.agrees()) fmt::print("{}\n", what);
    }
    fmt::print("{} {}: the free replay agrees in {} of {} iterations, the pinned one in all\n", policy, h.name, agree,
               kIterations);
    if (free_must_agree) {
      EXPECT_GE(agree, kIterations / 2) << policy << " " << h.name;
    }
  }
}

}  // namespace

TEST(RuntimeSimAgreement, Rrfp) { expect_agreement("rrfp", true); }
TEST(RuntimeSimAgreement, RrfpFixed) { expect_agreement("rrfp-fixed", true); }
TEST(RuntimeSimAgreement, RrfpWait) { expect_agreement("rrfp-wait", false); }

// Only the rrfp policies have an arbiter to replay.
TEST(RuntimeSimAgreement, OtherPoliciesAreRefused) {
  BenchConfig cfg;
  cfg.exec.policy = "eager";
  cfg.check_decisions = true;
  EXPECT_THROW(run_bench(make_hint("1f1b", {2, 4, 0, 0, 0}), cfg), SpecError);
}
