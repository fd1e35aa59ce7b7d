// The rrfp policies' C configuration API (sched/rrfp_sched.h): state per
// scheduling context, a configuration that must match the policy, and any
// StarPU program scheduled when nothing is attached.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include <starpu.h>

#include "hints/generators.hpp"
#include "runtime/session.hpp"
#include "sched/arbiter.hpp"
#include "sched/policy_registry.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {
namespace {

std::atomic<int> g_ran{0};
void count_body(void**, void*) { g_ran.fetch_add(1); }

// Plain StarPU tasks, some restricted to one worker, none attached to a run.
TEST(SchedApi, WithNothingAttachedAnyStarpuProgramRuns) {
  for (const char* pol : {"rrfp", "rrfp-fixed"}) {
    StarpuSession session(resolve_policy(pol), 2, false);
    starpu_codelet cl;
    starpu_codelet_init(&cl);
    cl.cpu_funcs[0] = count_body;
    cl.nbuffers = 0;
    g_ran = 0;
    std::uint32_t only_worker_1 = 1u << starpu_worker_get_by_type(STARPU_CPU_WORKER, 1);
    for (int i = 0; i < 200; ++i) {
      starpu_task* t = starpu_task_create();
      t->cl = &cl;
      if (i % 2) t->workerids = &only_worker_1, t->workerids_len = 1;
      ASSERT_EQ(starpu_task_submit(t), 0);
    }
    starpu_task_wait_for_all();
    EXPECT_EQ(g_ran.load(), 200) << pol;
  }
}

TEST(SchedApi, AConfigurationMustMatchThePolicy) {
  Hint h = make_hint("1f1b", {2, 4, 0, 0, 0});
  Arbiter strict(h, ArbiterOptions{Mode::Strict, 0, {}, {}});
  Arbiter ready(h, ArbiterOptions{Mode::ReadinessFirst, 0, {}, {}});
  const int workers[2] = {0, 1};
  rrfp_sched_config cfg{&strict, workers, 2, nullptr, 0, h.graph->size(), 1, 0, nullptr, nullptr, nullptr};
  char err[256] = "";
  {
    StarpuSession session(resolve_policy("rrfp"), 2, false);
    EXPECT_NE(rrfp_sched_attach(RRFP_INITIAL_SCHED_CTX, &cfg, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("mode"), std::string::npos) << err;
    cfg.arbiter = &ready;
    EXPECT_EQ(rrfp_sched_attach(RRFP_INITIAL_SCHED_CTX, &cfg, err, sizeof err), 0) << err;
    EXPECT_NE(rrfp_sched_attach(RRFP_INITIAL_SCHED_CTX, &cfg, err, sizeof err), 0);  // one run at a time
    EXPECT_NE(std::string(err).find("already attached"), std::string::npos) << err;
    rrfp_sched_detach(RRFP_INITIAL_SCHED_CTX);
  }
  {
    StarpuSession session(resolve_policy("eager"), 2, false);
    EXPECT_NE(rrfp_sched_attach(RRFP_INITIAL_SCHED_CTX, &cfg, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("not rrfp"), std::string::npos) << err;
    EXPECT_EQ(rrfp_sched_events(RRFP_INITIAL_SCHED_CTX), 0);
  }
}

}  // namespace
}  // namespace rrfp
