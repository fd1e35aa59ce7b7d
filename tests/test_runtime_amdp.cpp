// AMDP on the runtime (docs/async.md): the multi-directional placement,
// its order, the forward gate (a forward of step k after its stage's update
// of step k-2, through the version handles of the data plan) and, under
// every rrfp policy and random pass durations, the drift bound of one
// update, read from the versions each pass saw, as in training.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "hints/gen_amdp.hpp"
#include "hints/validate.hpp"
#include "runtime/data_plan.hpp"
#include "tests/runtime_helpers.hpp"

namespace rrfp {
namespace {

using testing::use_policy;

TEST(RuntimeAmdp, EveryDeviceHoldsOneDistinctStagePerDirection) {
  for (int dirs : {2, 4})
    for (int P = dirs; P <= 32; P += dirs) {
      const auto pl = amdp_placement(P, dirs);
      ASSERT_EQ(static_cast<int>(pl.size()), dirs);
      std::vector<std::set<int>> held(P), holders(P);
      for (int p = 0; p < dirs; ++p)
        for (int s = 0; s < P; ++s) {
          held[pl[p][s]].insert(s);
          holders[s].insert(pl[p][s]);
        }
      for (int d = 0; d < P; ++d) EXPECT_EQ(static_cast<int>(held[d].size()), dirs) << "P=" << P << " device " << d;
      // Mirror groups: every stage has one copy per direction, each elsewhere.
      for (int s = 0; s < P; ++s) EXPECT_EQ(static_cast<int>(holders[s].size()), dirs) << "P=" << P << " stage " << s;
      EXPECT_EQ(pl[1][0], P - 1) << "the second direction runs up";
    }
  for (auto [P, dirs] : {std::pair{3, 2}, {6, 4}, {2, 4}, {4, 3}, {0, 2}}) {
    EXPECT_THROW(amdp_placement(P, dirs), SpecError) << P << " " << dirs;
  }
  EXPECT_THROW(amdp_hint(4, 2, 3, 2), SpecError) << "3 microbatches over 2 directions";
}

TEST(RuntimeAmdp, OrderIsValidAndKeepsTheGate) {
  for (auto [P, dirs] : {std::pair{2, 2}, {4, 2}, {6, 2}, {4, 4}, {8, 4}})
    for (int group : {dirs, 2 * dirs, 4 * dirs}) {
      const Hint h = amdp_hint(P, dirs, group, 4);
      const std::string what = fmt::format("P={} dirs={} group={}", P, dirs, group);
      ASSERT_NO_THROW(validate_hint(h)) << what;
      for (int c : h.peak_inflight()) EXPECT_LE(c, P * dirs / 2) << what;
      // The order run strictly, with AMDP's update rules on top of the
      // graph's edges (a forward of group k after every backward of group
      // k-2 on its stage, a backward of group k after every one of k-1):
      // it must finish, or rrfp-fixed could wait on an update forever.
      const TaskGraph& g = *h.graph;
      std::vector<int> head(P, 0), left(static_cast<size_t>(P) * 4, group);  // backwards left per (stage, group)
      std::vector<unsigned char> done(g.size(), 0);
      auto ready = [&](int id) {
        const Task& t = g.task(id);
        for (int q : g.preds(id))
          if (!done[q]) return false;
        const int k = t.mb / group;
        if (t.kind == Kind::F && k >= 2 && left[t.stage * 4 + k - 2] > 0) return false;
        if (t.kind == Kind::BW && k >= 1 && left[t.stage * 4 + k - 1] > 0) return false;
        return true;
      };
      for (int ran = 0; ran < g.size();) {
        int progress = 0;
        for (int d = 0; d < P; ++d)
          while (head[d] < static_cast<int>(h.order[d].size()) && ready(h.order[d][head[d]])) {
            const int id = h.order[d][head[d]++];
            done[id] = 1;
            if (g.task(id).kind == Kind::BW) --left[g.task(id).stage * 4 + g.task(id).mb / group];
            ++ran, ++progress;
          }
        ASSERT_GT(progress, 0) << what << ": the strict order waits on an update that waits on it";
      }
    }
}

TEST(RuntimeAmdp, ForwardsWaitForTheUpdateTwoStepsBackInTheDataFlow) {
  const int P = 4, group = 4, groups = 4;
  const Hint h = amdp_hint(P, 2, group, groups);
  const TaskGraph& g = *h.graph;
  DataPlanOptions o;
  o.epilogues = true;
  o.epilogue_group = group;
  o.gate_lag = 2;
  const DataPlan p = plan_data(g, o);
  const auto deps = implied_dependencies(p, g.topological_order());
  auto is_epilogue = [&](int node) { return node >= p.epilogue_node(0); };
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    std::set<int> epis;
    for (int d : deps[id])
      if (is_epilogue(d)) epis.insert(d - p.epilogue_node(0));
    std::set<int> want;
    const int k = t.mb / group;
    if (t.kind == Kind::F && k >= 2) want.insert((k - 2) * P + t.stage);
    if (t.kind == Kind::BW && k >= 1) want.insert((k - 1) * P + t.stage);
    EXPECT_EQ(epis, want) << g.label(id) << " (mb " << t.mb << ")";
  }
  // An update depends on its group's backwards of its stage on both devices
  // of the mirror group, and on nothing of another stage; besides, on the
  // previous group's backwards, which read the version it overwrites
  // (implied anyway: they come before the previous update).
  for (int e = 0; e < p.epilogues; ++e) {
    const int k = e / P, s = e % P;
    std::set<int> devices;
    for (int d : deps[p.epilogue_node(e)]) {
      if (is_epilogue(d)) continue;
      ASSERT_LT(d, g.size());
      EXPECT_EQ(g.task(d).stage, s);
      const int of = g.task(d).mb / group;
      if (of == k - 1) {
        EXPECT_EQ(g.task(d).kind, Kind::BW) << "update " << k << " of stage " << s;
        continue;
      }
      EXPECT_EQ(of, k);
      devices.insert(g.task(d).device);
    }
    EXPECT_EQ(static_cast<int>(devices.size()), 2) << "update " << k << " of stage " << s;
  }
  DataPlanOptions bad;
  bad.gate_lag = 2;
  EXPECT_THROW(plan_data(g, bad), SpecError) << "a gate without grouped epilogues";
}

TEST(RuntimeAmdp, DriftStaysWithinOneUpdateUnderEveryPolicyAndRandomDurations) {
  unsetenv("RRFP_SCHED_LIB");
  int reached = 0;
  for (const char* pol : {"rrfp", "rrfp-wait", "rrfp-fixed"})
    for (auto [P, dirs] : {std::pair{2, 2}, {4, 2}, {4, 4}})
      for (int seed = 1; seed <= 4; ++seed) {
        use_policy(pol);
        const int group = 2 * dirs, groups = 4;
        const Hint h = amdp_hint(P, dirs, group, groups);
        const TaskGraph& g = *h.graph;
        std::vector<std::atomic<int>> version(P);
        for (auto& v : version) v.store(0);
        std::vector<int> seen(g.size(), -1), done_at(g.size(), -1), start_at(g.size(), -1), update_at(P * groups, -1);
        std::vector<std::uint32_t> jitter(g.size());
        std::mt19937 rng(seed * 104729 + P * 31 + dirs);
        for (auto& j : jitter) j = rng() % 1500;  // microseconds
        std::atomic<int> clock{0};
        ExecOptions o;
        o.epilogue_group = group;
        o.gate_lag = 2;
        o.stage_epilogue = [&](int e) {
          update_at[e] = clock.fetch_add(1);
          version[e % P].fetch_add(1);
        };
        auto body = [&](int id) {
          start_at[id] = clock.fetch_add(1);
          seen[id] = version[g.task(id).stage].load();
          std::this_thread::sleep_for(std::chrono::microseconds(jitter[id]));
          done_at[id] = clock.fetch_add(1);
        };
        const std::string what = fmt::format("{} P={} dirs={} seed {}", pol, P, dirs, seed);
        ExecResult r;
        ASSERT_NO_THROW(r = execute(h, body, o)) << what;
        testing::expect_within_cap(r, what);
        for (int s = 0; s < P; ++s) {
          EXPECT_EQ(version[s].load(), groups) << what;
          for (int m = 0; m < g.spec().microbatches; ++m) {
            const int f = g.find(Kind::F, s, m), b = g.backward_of(s, m), k = m / group;
            const int drift = seen[b] - seen[f];
            EXPECT_GE(drift, 0) << what;
            EXPECT_LE(drift, 1) << what << " stage " << s << " mb " << m;
            reached += drift == 1;
            EXPECT_EQ(seen[b], k) << what << ": a backward sees every earlier step's update and not its own";
            if (k >= 2) {
              EXPECT_GT(start_at[f], update_at[(k - 2) * P + s]) << what << " gate of " << g.label(f);
            }
          }
        }
      }
  EXPECT_GT(reached, 0) << "no microbatch crossed an update: the versions would not show a wrong one";
}

// AMDP across ranks moves bytes through the same graph (docs/async.md,
// "AMDP under mpirun"). In one process: each W/BW adds to its device's
// accumulator bytes, every epilogue reads every accumulator of its stage
// with all of the group's counts in it and writes its version, every
// install reads exactly that version, a gated forward reads the version
// of the update two groups back and a backward that of the update one
// group back, never a later one.
TEST(RuntimeAmdp, StateBytesCarrySumsToTheUpdateAndVersionsToInstalls) {
  for (const char* pol : {"rrfp", "rrfp-fixed", "eager"}) {
    use_policy(pol);
    const int P = 4, group = 4, groups = 3;
    const Hint h = amdp_hint(P, 2, group, groups);
    const TaskGraph& g = *h.graph;
    const PipelineSpec& spec = h.spec();
    auto header = [](const void* p) { return *static_cast<const std::int64_t*>(p); };
    std::atomic<int> installs{0}, gated{0}, after_update{0};
    ExecOptions o;
    o.epilogue_group = group;
    o.gate_lag = 2;
    o.state_bytes = [](int) { return std::size_t{32}; };
    o.accumulator_device = [](int, int d) { return d; };
    o.stage_epilogue = [&](int e) {
      const int k = e / P, s = e % P;
      const EpilogueIo* io = epilogue_io();
      ASSERT_TRUE(io && io->version) << pol;
      EXPECT_EQ(io->accumulators.size(), 2u) << pol;  // one per direction's device
      for (const auto& [d, buf] : io->accumulators) {
        int want = 0;
        for (int m = 0; m < (k + 1) * group; ++m) want += spec.device_of(s, m) == d;
        EXPECT_EQ(header(buf), want) << pol << " update " << e << " device " << d;
      }
      *static_cast<std::int64_t*>(io->version) = e + 1;
    };
    o.stage_install = [&](int e, int d) {
      EXPECT_NE(d, spec.device_of(e % P, 0)) << pol << ": an install on the home";
      EXPECT_EQ(header(epilogue_io()->version), e + 1) << pol << " install of update " << e;
      installs.fetch_add(1);
    };
    auto body = [&](int id, const TaskIo& io) {
      const Task& t = g.task(id);
      if (t.kind == Kind::BW) {
        ASSERT_NE(io.accumulator, nullptr);
        ++*static_cast<std::int64_t*>(io.accumulator);
      }
      if (t.kind == Kind::F && t.mb / group >= 2) {
        ASSERT_NE(io.version, nullptr);
        EXPECT_EQ(header(io.version), (t.mb / group - 2) * P + t.stage + 1) << pol << " " << g.label(id);
        gated.fetch_add(1);
      }
      if (t.kind == Kind::BW && t.mb / group >= 1) {  // the previous update's version, never a later one
        ASSERT_NE(io.version, nullptr);
        EXPECT_EQ(header(io.version), (t.mb / group - 1) * P + t.stage + 1) << pol << " " << g.label(id);
        after_update.fetch_add(1);
      }
    };
    ASSERT_NO_THROW(execute(h, body, o)) << pol;
    EXPECT_EQ(installs.load(), groups * P) << pol;  // each update, on its stage's other device
    EXPECT_EQ(gated.load(), (groups - 2) * group * P) << pol;
    EXPECT_EQ(after_update.load(), (groups - 1) * group * P) << pol;
  }
}

}  // namespace
}  // namespace rrfp
