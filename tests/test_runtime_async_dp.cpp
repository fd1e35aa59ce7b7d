// PACI with data-parallel replicas (docs/async.md, "PACI with replicas"):
// every copy of a stage keeps its own forward window over its own
// microbatches, one update per stage and step waits for every copy's
// backwards, and under every policy and random pass durations no
// microbatch's backward sees more updates than PACI's bound for one copy,
// ceil((P - s - 1) / a), a = a copy's microbatches per step.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "hints/generators.hpp"
#include "hints/replicate.hpp"
#include "runtime/data_plan.hpp"
#include "tests/runtime_helpers.hpp"

namespace rrfp {
namespace {

using testing::use_policy;

// D copies of the window's 1F1B, each taking a of every step's D x a microbatches.
Hint paci_replicas(int P, int a, int steps, int D) { return replicate(make_hint("1f1b", {P, a * steps, 0, 0, 0}), D, a); }

TEST(RuntimeAsyncDataParallel, EachCopyHasItsOwnWindowInTheDataFlow) {
  const int P = 3, a = 2, steps = 4, D = 2;
  const Hint h = paci_replicas(P, a, steps, D);
  const TaskGraph& g = *h.graph;
  const PipelineSpec& sp = g.spec();
  ASSERT_EQ(sp.pipelines(), D);
  for (int m = 0; m < sp.microbatches; ++m) EXPECT_EQ(sp.pipeline_of(m), (m % (D * a)) / a) << m;
  DataPlanOptions o;
  o.epilogues = true;
  o.epilogue_group = D * a;
  for (int s = 0; s < P; ++s) o.forward_window.push_back(P - s);
  const DataPlan p = plan_data(g, o);
  const auto deps = implied_dependencies(p, g.topological_order(p.window_edges));
  const std::vector<int> place = sp.pipeline_places();
  for (int m = 0; m < sp.microbatches; ++m)  // step k's share of a replica follows its k earlier shares
    EXPECT_EQ(place[m], (m / (D * a)) * a + m % a) << m;
  int with_update = 0, windowed = 0;
  for (int s = 0; s < P; ++s)
    for (int m = 0; m < sp.microbatches; ++m) {
      const int f = g.find(Kind::F, s, m), w = P - s, at = place[m];
      const auto& d = deps[f];
      auto has = [&](int node) { return std::count(d.begin(), d.end(), node) > 0; };
      // Never the other copy's backwards: each copy's window is its own.
      for (int x : d) {
        if (x < g.size() && g.task(x).stage == s && g.task(x).kind != Kind::F) {
          EXPECT_EQ(sp.pipeline_of(g.task(x).mb), sp.pipeline_of(m)) << g.label(f) << " waits for " << g.label(x);
        }
      }
      if (at < w) continue;
      int earlier = -1;  // w before m in its copy
      for (int k = m - 1, left = w; k >= 0 && left > 0; --k)
        if (sp.pipeline_of(k) == sp.pipeline_of(m) && --left == 0) earlier = k;
      ASSERT_GE(earlier, 0);
      ++windowed;
      if ((at - w + 1) % a == 0) {  // the copy's last of its step: the stage's update comes after it
        EXPECT_TRUE(has(p.epilogue_node((earlier / (D * a)) * P + s))) << g.label(f) << " before its stage's update";
        ++with_update;
      } else {
        EXPECT_TRUE(has(g.backward_of(s, earlier))) << g.label(f) << " after " << g.label(g.backward_of(s, earlier));
      }
    }
  EXPECT_GT(with_update, 0);
  EXPECT_GT(windowed, with_update);
  // One update per stage and step, after both copies' backwards of the step.
  ASSERT_EQ(p.epilogues, steps * P);
  for (int e = 0; e < p.epilogues; ++e) {
    const int k = e / P, s = e % P;
    for (int m = k * D * a; m < (k + 1) * D * a; ++m) {
      const auto& d = deps[p.epilogue_node(e)];
      EXPECT_TRUE(std::count(d.begin(), d.end(), g.backward_of(s, m))) << "update " << k << " of stage " << s;
    }
  }
  EXPECT_THROW(replicate(make_hint("1f1b", {P, 6, 0, 0, 0}), D, 4), SpecError);  // 4 does not divide 6
}

TEST(RuntimeAsyncDataParallel, DriftStaysWithinPacisBoundPerCopyUnderEveryPolicy) {
  unsetenv("RRFP_SCHED_LIB");
  const int D = 2, steps = 3;
  int reached = 0;
  for (const char* pol : {"rrfp", "rrfp-wait", "rrfp-fixed", "eager", "lws"})
    for (int P : {2, 3})
      for (int a : {1, 2})
        for (int seed = 1; seed <= 3; ++seed) {
          use_policy(pol);
          const Hint h = paci_replicas(P, a, steps, D);
          const TaskGraph& g = *h.graph;
          const int M = g.spec().microbatches;
          std::vector<std::atomic<int>> version(P);
          for (auto& v : version) v.store(0);
          std::vector<int> seen_f(g.size(), -1), seen_b(g.size(), -1), done_at(g.size(), -1);
          std::vector<std::uint32_t> jitter(g.size());
          std::mt19937 rng(seed * 7919 + P * 31 + a);
          for (auto& j : jitter) j = rng() % 1500;  // microseconds
          std::vector<int> updates_at(P * steps, -1);
          std::atomic<int> order{0};
          ExecOptions o;
          o.epilogue_group = D * a;
          for (int s = 0; s < P; ++s) o.forward_window.push_back(P - s);
          o.stage_epilogue = [&](int e) {
            updates_at[e] = order.fetch_add(1);
            version[e % P].fetch_add(1);
          };
          auto body = [&](int id) {
            const Task& t = g.task(id);
            (t.kind == Kind::F ? seen_f : seen_b)[id] = version[t.stage].load();
            std::this_thread::sleep_for(std::chrono::microseconds(jitter[id]));
            done_at[id] = order.fetch_add(1);
          };
          const std::string what = fmt::format("{} P={} a={} seed {}", pol, P, a, seed);
          ExecResult r;
          try {
            r = execute(h, body, o);
          } catch (const std::exception& e) {
            FAIL() << what << ": " << e.what();
          }
          testing::expect_within_cap(r, what);
          const int bound = (P - 1 + a - 1) / a;  // stage 0's: the largest
          for (int s = 0; s < P; ++s) {
            EXPECT_EQ(version[s].load(), steps) << what;
            for (int m = 0; m < M; ++m) {
              const int f = g.find(Kind::F, s, m), b = g.backward_of(s, m);
              const int drift = seen_b[b] - seen_f[f];
              EXPECT_GE(drift, 0) << what;
              EXPECT_LE(drift, (P - s - 1 + a - 1) / a) << what << " stage " << s << " mb " << m;
              if (s == 0 && drift == bound && drift > 0) ++reached;
              EXPECT_LT(done_at[b], updates_at[(m / (D * a)) * P + s]) << what;  // every copy's, before the update
            }
          }
        }
  EXPECT_GT(reached, 0) << "no run reached the bound: the versions would not show a wrong one";
}

}  // namespace
}  // namespace rrfp
