// The data flow (runtime/data_plan.hpp, docs/runtime.md): every dependency
// StarPU derives from the tasks' data accesses is a graph edge and every
// graph edge is one, for every hint of the zoo, split and fused, with
// tensor-parallel members, under both accumulator modes and both
// submission orders; and real runs declare no dependency by hand and
// deliver every message byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "hints/gen_amdp.hpp"
#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "runtime/bench.hpp"
#include "runtime/data_plan.hpp"
#include "tests/runtime_helpers.hpp"

namespace rrfp {
namespace {

// The member tasks node `d` waits for: a link for what it waits for, a
// channel's receive for its send (the wire orders them, not StarPU).
void collect(const DataPlan& p, const std::vector<std::vector<int>>& deps, int d, std::set<int>& out) {
  if (d < p.tasks()) {
    out.insert(d);
    return;
  }
  if (p.is_channel_node(d) && (d - p.send_node(0)) % 2 == 1) return collect(p, deps, d - 1, out);
  for (int x : deps[d]) collect(p, deps, x, out);
}

// Dependencies among member tasks, links and channels collapsed into their consumer.
std::vector<std::set<int>> task_deps(const DataPlan& p, const std::vector<std::vector<int>>& deps) {
  std::vector<std::set<int>> out(p.tasks());
  for (int mt = 0; mt < p.tasks(); ++mt)
    for (int d : deps[mt]) collect(p, deps, d, out[mt]);
  return out;
}

// `ranks` > 1: the slots split evenly over that many ranks, and messages
// between them go through channels (DataPlanOptions::channel_rank).
void expect_edges_are_data(const Hint& h, int T, bool commute, bool strict, double link, int ranks = 1) {
  const TaskGraph& g = *h.graph;
  DataPlanOptions o;
  o.tensor_parallel = T;
  o.commute = commute;
  o.epilogues = true;
  if (link > 0) o.link_delay_s = [link](int, int) { return link; };
  const int slots = h.devices() * T;
  auto rank_of = [=](int slot) { return slot * ranks / slots; };
  if (ranks > 1) o.channel_rank = rank_of;
  const DataPlan p = plan_data(g, o);
  if (ranks > 1) {
    // No node touches a message of another rank (accumulators of a stage's
    // copies still do: StarPU-MPI moves them), and each message that
    // crosses ranks is one channel.
    for (int node = 0; node < p.nodes(); ++node)
      for (const AccessSpec& a : p.access[node])
        if (const HandleKind k = p.handles[a.handle].kind; k == HandleKind::Activation || k == HandleKind::Gradient) {
          EXPECT_EQ(rank_of(p.handles[a.handle].slot), rank_of(p.slot[node])) << h.name << " node " << node;
        }
    int crossing = 0;
    for (int mt = 0; mt < p.tasks(); ++mt)
      for (int pr : g.preds(mt % p.n))
        crossing += rank_of(g.task(pr).device * T + mt / p.n) != rank_of(p.slot[mt]) &&
                    g.task(pr).stage != g.task(mt % p.n).stage;
    EXPECT_EQ(static_cast<int>(p.channels.size()), crossing) << h.name;
    for (const ChannelSpec& c : p.channels) EXPECT_NE(c.src_rank, c.dst_rank);
  }
  std::vector<int> order = strict ? strict_submission_order(h) : g.topological_order();
  if (order.empty()) order = g.topological_order();
  const auto deps = implied_dependencies(p, order);
  const auto td = task_deps(p, deps);
  const int n = g.size();
  for (int mt = 0; mt < n * T; ++mt) {
    std::set<int> want;
    for (int pr : g.preds(mt % n)) want.insert((mt / n) * n + pr);
    if (!commute) {  // plain RW accumulators also order a stage's W/BW among themselves
      for (int d : td[mt]) EXPECT_TRUE(want.count(d) || g.task(d % n).stage == g.task(mt % n).stage) << h.name;
      for (int w : want) EXPECT_TRUE(td[mt].count(w)) << h.name << " " << g.label(mt % n);
    } else {
      EXPECT_EQ(td[mt], want) << h.name << " T=" << T << " task " << g.label(mt % n);
    }
  }
  // An epilogue waits for exactly the W/BW of its stage and member.
  for (int e = 0; e < p.epilogues; ++e) {
    const int member = e / g.spec().stages, stage = e % g.spec().stages;
    std::set<int> want, got(deps[p.epilogue_node(e)].begin(), deps[p.epilogue_node(e)].end());
    for (int id = 0; id < n; ++id) {
      const Task& t = g.task(id);
      if (t.stage == stage && (t.kind == Kind::W || t.kind == Kind::BW)) want.insert(member * n + id);
    }
    if (commute) {
      EXPECT_EQ(got, want) << h.name << " epilogue " << e;
    }
    for (int w : got) EXPECT_TRUE(want.count(w) || !commute) << h.name;
  }
  for (const LinkSpec& l : p.links) EXPECT_GT(l.delay_s, 0);
}

TEST(DataFlow, EveryEdgeIsADataAccessForEveryHint) {
  for (const char* name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "zbv", "chimera", "hanayo",
                           "dualpipev"})
    for (int split : {-1, 0, 1}) {
      HintParams hp;
      hp.stages = 4;
      hp.microbatches = 8;
      hp.split = split;
      Hint h;
      try {
        h = make_hint(name, hp);
      } catch (const SpecError&) {
        continue;  // e.g. zb-h1 cannot be fused
      }
      for (int T : {1, 2})
        for (bool strict : {false, true}) {
          expect_edges_are_data(h, T, !strict, strict, 0);
          expect_edges_are_data(h, T, !strict, strict, 0.001);
          for (int ranks : {2, 4}) expect_edges_are_data(h, T, !strict, strict, 0.001, ranks);
        }
    }
}

TEST(DataFlow, HandlesPerMessageAndStage) {
  Hint h = make_hint("1f1b", {2, 4, 0, 0, 0});  // fused BW
  DataPlanOptions o;
  o.message_bytes = 100;
  o.epilogues = true;
  const DataPlan p = plan_data(*h.graph, o);
  int act = 0, grad = 0, stash = 0, acc = 0;
  for (const HandleSpec& s : p.handles) {
    act += s.kind == HandleKind::Activation, grad += s.kind == HandleKind::Gradient;
    stash += s.kind == HandleKind::Stash, acc += s.kind == HandleKind::Accumulator;
    if (s.kind == HandleKind::Activation || s.kind == HandleKind::Gradient) {
      EXPECT_EQ(s.bytes, 100u);
    }
  }
  EXPECT_EQ(act, 4);    // (S - 1) * M
  EXPECT_EQ(grad, 4);
  EXPECT_EQ(stash, 8);  // S * M
  EXPECT_EQ(acc, 2);    // S (one device each)
}

// AMDP across ranks (docs/async.md, "AMDP under mpirun"): with state bytes
// the accumulators and versions carry a header plus the stage's bytes, the
// copies mapped together share one accumulator, and every epilogue is
// followed by one install per other accumulator of its stage, which waits
// for that epilogue and for nothing else; the gated forwards still wait
// for the epilogue two groups back.
TEST(DataFlow, StateBytesSharedAccumulatorsAndInstalls) {
  const int P = 4, g = 4, K = 3;
  Hint h = amdp_hint(P, 4, g, K);  // every device holds every stage
  const PipelineSpec& spec = h.spec();
  DataPlanOptions o;
  o.epilogues = true;
  o.commute = true;
  o.epilogue_group = g;
  o.gate_lag = 2;
  o.state_bytes = [](int s) { return static_cast<std::size_t>(1000 + s); };
  // Devices 0-1 and 2-3 are two ranks: a rank's copies share the first one's accumulator.
  o.accumulator_device = [&](int s, int d) {
    const int home = spec.device_of(s, 0);
    return d / 2 == home / 2 ? home : (d / 2) * 2;
  };
  const DataPlan p = plan_data(*h.graph, o);
  int acc = 0, ver = 0;
  for (const HandleSpec& x : p.handles) {
    if (x.kind == HandleKind::Accumulator || x.kind == HandleKind::Version) {
      EXPECT_TRUE(x.vector);
      EXPECT_EQ(x.bytes, 8u + 1000 + x.stage);
    }
    acc += x.kind == HandleKind::Accumulator, ver += x.kind == HandleKind::Version;
  }
  EXPECT_EQ(acc, P * 2);  // one per stage and rank
  EXPECT_EQ(ver, P * 2);  // one per stage and gate slot
  EXPECT_EQ(p.installs(), K * P);  // per epilogue, the other rank's accumulator
  const auto deps = implied_dependencies(p, h.graph->topological_order());
  for (int i = 0; i < p.installs(); ++i) {
    const int e = p.install_epilogue[i], s = e % P;
    EXPECT_NE(p.install_device[i] / 2, spec.device_of(s, 0) / 2) << "install " << i << " on the home's rank";
    EXPECT_EQ(deps[p.install_node(i)], std::vector<int>{p.epilogue_node(e)}) << "install " << i;
  }
  for (int id = 0; id < h.graph->size(); ++id) {
    const Task& t = h.graph->task(id);
    if (t.kind != Kind::F || t.mb / g < 2) continue;
    const int e = (t.mb / g - 2) * P + t.stage;
    const auto& d = deps[id];
    EXPECT_TRUE(std::find(d.begin(), d.end(), p.epilogue_node(e)) != d.end()) << h.graph->label(id);
  }
  // A backward of group k >= 1 reads the version its stage's update of
  // group k - 1 wrote. Here that update already precedes it through the
  // accumulator; under StarPU-MPI that only waits for the accumulator's
  // send, so an away copy's backward needs the version itself to run on
  // the weights of exactly version k.
  for (int id = 0; id < h.graph->size(); ++id) {
    const Task& t = h.graph->task(id);
    if (t.kind != Kind::BW) continue;
    const int e = (t.mb / g - 1) * P + t.stage;
    std::vector<int> versions;
    for (const AccessSpec& a : p.access[id])
      if (p.handles[a.handle].kind == HandleKind::Version) {
        EXPECT_EQ(a.mode, Access::R) << h.graph->label(id);
        versions.push_back(a.handle);
      }
    if (t.mb / g < 1) {
      EXPECT_TRUE(versions.empty()) << h.graph->label(id);
      continue;
    }
    ASSERT_EQ(versions.size(), 1u) << h.graph->label(id) << " on device " << t.device;
    const auto& writer = p.access[p.epilogue_node(e)];
    EXPECT_TRUE(std::any_of(writer.begin(), writer.end(),
                            [&](const AccessSpec& a) { return a.handle == versions[0] && a.mode == Access::W; }))
        << h.graph->label(id) << ": not the version of update " << e;
  }
}

// A tensor-parallel follower runs its leader's order, so it must not hold a
// handle that StarPU grants in an order of its own: a pushed follower task
// holding a commuting accumulator kept the leader's choice from becoming
// ready (a deadlock across the group's collectives, seen under mpirun).
TEST(DataFlow, FollowersHoldNoCommutingHandle) {
  for (const char* name : {"1f1b", "zb-h1", "interleaved-1f1b", "zbv"}) {
    Hint h = make_hint(name, {2, 4, std::string(name) == "interleaved-1f1b" ? 2 : 0, -1, 0});
    DataPlanOptions o;
    o.tensor_parallel = 2;
    o.epilogues = true;
    const DataPlan p = plan_data(*h.graph, o);
    int leader_commute = 0;
    for (int mt = 0; mt < p.tasks(); ++mt)
      for (const AccessSpec& a : p.access[mt]) {
        if (a.mode != Access::RWCommute) continue;
        EXPECT_EQ(mt / p.n, 0) << name << ": follower task " << h.graph->label(mt % p.n) << " commutes";
        leader_commute += mt / p.n == 0;
      }
    EXPECT_GT(leader_commute, 0) << name;  // the leader still accumulates with COMMUTE
  }
}

// A real run: no dependency declared by hand, every message checked.
TEST(DataFlow, RealRunsDeliverEveryByteWithoutExplicitDependencies) {
  for (const char* pol : {"rrfp", "rrfp-fixed", "eager", "dmda"}) {
    testing::use_policy(pol);
    Hint h = make_hint("zb-h1", {2, 6, 0, -1, 0});
    BenchConfig cfg;
    cfg.cost.unit_ms = 0.2;
    cfg.cost.link_ms = 0.3;  // link tasks in the way of every message
    cfg.exec.message_bytes = 10000;
    BenchReport r = run_bench(h, cfg);
    EXPECT_EQ(r.messages_checked, 2 * (2 - 1) * 6) << pol;
    EXPECT_EQ(r.last.explicit_dependencies, 0) << pol;
    EXPECT_GT(r.last.data_handles, 0) << pol;
  }
  unsetenv("STARPU_SCHED");
}

}  // namespace
}  // namespace rrfp
