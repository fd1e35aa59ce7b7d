// Grouped epilogues (ExecOptions::epilogue_group): the per-stage updates of
// asynchronous training (docs/async.md). Each group's update runs after the
// group's W/BW on its stage and before the next group's, and, under every
// rrfp policy and random pass durations, no microbatch's backward sees more
// of its stage's updates than PACI's bound ceil((P - s - 1) / a) beyond
// what its forward saw: the versions are recorded, as in training.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>

#include <fmt/format.h>
#include <random>
#include <thread>

#include "hints/generators.hpp"
#include "runtime/data_plan.hpp"
#include "tests/runtime_helpers.hpp"

namespace rrfp {
namespace {

using testing::use_policy;

TEST(RuntimeAsync, GroupedEpiloguesFollowTheirGroupInTheDataFlow) {
  for (int split : {0, 1}) {
    Hint h = make_hint("1f1b", {3, 12, 0, split, 0});
    const TaskGraph& g = *h.graph;
    DataPlanOptions o;
    o.epilogues = true;
    o.epilogue_group = 4;
    const DataPlan p = plan_data(g, o);
    ASSERT_EQ(p.epilogues, 3 * 3);
    const auto deps = implied_dependencies(p, g.topological_order());
    for (int e = 0; e < p.epilogues; ++e) {
      const int k = e / 3, s = e % 3;
      std::set<int> want;
      for (int id = 0; id < g.size(); ++id) {
        const Task& t = g.task(id);
        if (t.stage == s && t.mb / 4 == k && (t.kind == Kind::W || t.kind == Kind::BW)) want.insert(id);
      }
      std::set<int> got(deps[p.epilogue_node(e)].begin(), deps[p.epilogue_node(e)].end());
      EXPECT_EQ(got, want) << "update " << k << " of stage " << s;
      // The next group's accumulator writes wait for this update.
      for (int id = 0; id < g.size(); ++id) {
        const Task& t = g.task(id);
        if (t.stage == s && t.mb / 4 == k + 1 && (t.kind == Kind::W || t.kind == Kind::BW)) {
          EXPECT_TRUE(std::count(deps[id].begin(), deps[id].end(), p.epilogue_node(e))) << g.label(id);
        }
      }
    }
  }
  DataPlanOptions bad;
  bad.epilogues = true;
  bad.epilogue_group = 5;
  EXPECT_THROW(plan_data(*make_hint("1f1b", {2, 12, 0, 0, 0}).graph, bad), SpecError);
}

// PACI's window as data flow: F(s, m) waits for the backward of m - W on
// its stage and, when that backward ends a group, for the stage's update
// after it; the submission order must keep each such backward first.
TEST(RuntimeAsync, ForwardWindowsAreDataFlow) {
  const int P = 3, M = 12, a = 2;
  Hint h = make_hint("1f1b", {P, M, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  DataPlanOptions o;
  o.epilogues = true;
  o.epilogue_group = a;
  for (int s = 0; s < P; ++s) o.forward_window.push_back(P - s);
  const DataPlan p = plan_data(g, o);
  const auto deps = implied_dependencies(p, g.topological_order(p.window_edges));
  int with_update = 0;
  for (int s = 0; s < P; ++s)
    for (int m = 0; m < M; ++m) {
      const int f = g.find(Kind::F, s, m), w = P - s;
      const auto& d = deps[f];
      auto has = [&](int node) { return std::count(d.begin(), d.end(), node) > 0; };
      if (m < w) {
        EXPECT_TRUE(std::none_of(d.begin(), d.end(), [&](int x) { return x < g.size() && g.task(x).stage == s; }))
            << g.label(f) << " is in the first window";
        continue;
      }
      if ((m - w + 1) % a == 0) {  // the update comes after that backward (the accumulator)
        EXPECT_TRUE(has(p.epilogue_node(((m - w) / a) * P + s))) << g.label(f) << " before its stage's update";
        ++with_update;
      } else {
        EXPECT_TRUE(has(g.backward_of(s, m - w))) << g.label(f);
      }
    }
  EXPECT_GT(with_update, 0);
  // Kahn's order of the graph alone puts some forward before the backward
  // its window waits for (after the group sort, inside a group): refused.
  EXPECT_THROW(submission_nodes(p, g.topological_order()), SpecError);
  // Bad windows: a negative one, or not one per stage.
  DataPlanOptions bad = o;
  bad.forward_window[0] = -1;
  EXPECT_THROW(plan_data(g, bad), SpecError);
  bad.forward_window = {1};
  EXPECT_THROW(plan_data(g, bad), SpecError);
}

// PACI's bound: ceil((cap - 1) / a) updates between a forward and its
// backward, cap = P - s (1F1B's in-flight peak, which the policies enforce).
int paci_bound(int P, int s, int a) { return (P - s - 1 + a - 1) / a; }

// The window is data flow (ExecOptions::forward_window), so StarPU's own
// policies keep it too: eager, lws and prio never see the caps.
TEST(RuntimeAsync, DriftStaysWithinPaciBoundUnderEveryPolicyAndRandomDurations) {
  unsetenv("RRFP_SCHED_LIB");
  int reached = 0;
  for (const char* pol : {"rrfp", "rrfp-wait", "rrfp-fixed", "eager", "lws", "prio"})
    for (int P : {2, 3, 4})
      for (int a : {1, 2, 3})
        for (int seed = 1; seed <= 6; ++seed) {
          use_policy(pol);
          const int groups = 4, M = a * groups;
          Hint h = make_hint("1f1b", {P, M, 0, 0, 0});
          const TaskGraph& g = *h.graph;
          std::vector<std::atomic<int>> version(P);
          for (auto& v : version) v.store(0);
          std::vector<int> seen_f(g.size(), -1), seen_b(g.size(), -1);
          std::vector<std::uint32_t> jitter(g.size());
          std::mt19937 rng(seed * 7919 + P * 31 + a);
          for (auto& j : jitter) j = rng() % 1500;  // microseconds
          std::vector<int> updates_at(P * groups, -1);
          ExecOptions o;
          o.epilogue_group = a;
          for (int s = 0; s < P; ++s) o.forward_window.push_back(P - s);
          std::atomic<int> order{0};
          std::vector<int> done_at(g.size(), -1);
          o.stage_epilogue = [&](int e) {
            const int s = e % P;
            updates_at[e] = order.fetch_add(1);
            version[s].fetch_add(1);
          };
          auto body = [&](int id) {
            const Task& t = g.task(id);
            (t.kind == Kind::F ? seen_f : seen_b)[id] = version[t.stage].load();
            std::this_thread::sleep_for(std::chrono::microseconds(jitter[id]));
            done_at[id] = order.fetch_add(1);
          };
          ExecResult r;
          try {
            r = execute(h, body, o);
          } catch (const std::exception& e) {
            std::string ran;
            for (int id = 0; id < g.size(); ++id)
              if (done_at[id] >= 0) ran += fmt::format(" {}@{}", g.label(id), done_at[id]);
            for (int e2 = 0; e2 < P * groups; ++e2)
              if (updates_at[e2] >= 0) ran += fmt::format(" U{}.{}@{}", e2 / P, e2 % P, updates_at[e2]);
            FAIL() << pol << " P=" << P << " a=" << a << ": " << e.what() << "\n ran:" << ran;
          }
          testing::expect_within_cap(r, pol);
          const std::string what = fmt::format("{} P={} a={} seed {}", pol, P, a, seed);
          for (int s = 0; s < P; ++s) {
            EXPECT_EQ(version[s].load(), groups) << what;
            for (int m = 0; m < M; ++m) {
              const int f = g.find(Kind::F, s, m), b = g.backward_of(s, m);
              const int drift = seen_b[b] - seen_f[f];
              EXPECT_GE(drift, 0) << what;
              EXPECT_LE(drift, paci_bound(P, s, a)) << what << " stage " << s << " mb " << m;
              if (drift == paci_bound(P, s, a) && drift > 0) ++reached;
              // The group's update came after its backward, the previous one before it.
              EXPECT_LT(done_at[b], updates_at[(m / a) * P + s]) << what;
              if (m / a > 0) {
                EXPECT_GT(done_at[b], updates_at[(m / a - 1) * P + s]) << what;
              }
            }
          }
        }
  EXPECT_GT(reached, 0) << "no run reached the bound: the versions would not show a wrong one";
}

TEST(RuntimeAsync, GroupedEpiloguesRefuseTensorParallelism) {
  unsetenv("RRFP_SCHED_LIB");
  use_policy("rrfp");
  Hint h = make_hint("1f1b", {2, 4, 0, 0, 0});
  ExecOptions o;
  o.epilogue_group = 2;
  o.tensor_parallel = 2;
  o.stage_epilogue = [](int) {};
  EXPECT_THROW(execute(h, [](int) {}, o), SpecError);
}

}  // namespace
}  // namespace rrfp
