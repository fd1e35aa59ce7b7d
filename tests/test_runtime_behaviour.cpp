// What distinguishes the policies, and how runs fail: readiness-first takes
// a ready later-ranked task where the strict order waits; an unrunnable
// strict hint and a throwing body stop with clear errors, never a hang.
#include "tests/runtime_helpers.hpp"

#include "codelets/cost_model.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

int position(const std::vector<int>& order, int id) {
  return static_cast<int>(std::find(order.begin(), order.end(), id) - order.begin());
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST(RuntimeBehaviour, ReadinessFirstRunsLaterTaskWhileStrictWaits) {
  unsetenv("RRFP_SCHED_LIB");
  // 1F1B, 2 devices: device 0's order is F0 F1 B0 F2 ... Device 1's B0 is
  // slow, so device 0's B0 is late; with one slot of slack rrfp runs F2
  // (ready, later in the order) meanwhile, rrfp-fixed waits for B0.
  Hint h = make_hint("1f1b", {2, 4, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  const int slow = g.find(Kind::BW, 1, 0), b0 = g.find(Kind::BW, 0, 0), f2 = g.find(Kind::F, 0, 2);
  auto body = [&](int id) { std::this_thread::sleep_for(std::chrono::milliseconds(id == slow ? 40 : 0) + std::chrono::microseconds(200)); };
  ExecOptions o;
  o.inflight_slack = 1;
  use_policy("rrfp");
  ExecResult rf = execute(h, body, o);
  use_policy("rrfp-fixed");
  ExecResult fx = execute(h, body, o);
  expect_valid_run(h, rf, "rrfp");
  expect_valid_run(h, fx, "rrfp-fixed");
  ASSERT_LT(position(h.order[0], b0), position(h.order[0], f2));  // the hint puts B0 first
  EXPECT_LT(position(rf.order[0], f2), position(rf.order[0], b0)) << "rrfp did not run the ready F2 early";
  EXPECT_EQ(fx.order, h.order);
  expect_within_cap(rf, "rrfp");
  EXPECT_LE(rf.peak_inflight[0], 3);
}

TEST(RuntimeBehaviour, UnrunnableStrictHintFailsFastReadinessFirstCompletes) {
  unsetenv("RRFP_SCHED_LIB");
  Hint h = make_hint("1f1b", {2, 2, 0, 0, 0});
  std::swap(h.order[1][0], h.order[1][1]);  // device 1 wants B0 before F0
  h.finalize();
  use_policy("rrfp-fixed");
  auto t0 = std::chrono::steady_clock::now();
  try {
    execute(h, sleep_body(h, 0.2), {});
    FAIL() << "rrfp-fixed ran an unrunnable strict order";
  } catch (const ExecError& e) {
    EXPECT_NE(std::string(e.what()).find("stalled"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1B0"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 5.0);
  use_policy("static-order");
  EXPECT_THROW(execute(h, sleep_body(h, 0.2), {}), ExecError);
  use_policy("rrfp");
  ExecResult r = execute(h, sleep_body(h, 0.2), {});
  expect_valid_run(h, r, "rrfp");
}

TEST(RuntimeBehaviour, ThrowingBodyStopsTheRunNamingTheTask) {
  unsetenv("RRFP_SCHED_LIB");
  Hint h = make_hint("1f1b", {3, 6, 0, 1, 0});
  const int bad = h.graph->find(Kind::F, 1, 2);
  for (const char* pol : {"rrfp", "rrfp-fixed", "eager", "static-order"}) {
    use_policy(pol);
    auto t0 = std::chrono::steady_clock::now();
    try {
      execute(h, [&](int id) { if (id == bad) throw std::runtime_error("boom"); }, {});
      ADD_FAILURE() << pol << ": no error";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("1F2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds_since(t0), 5.0) << pol;
  }
}

// A throwing epilogue (the optimizer step in training) fails the run with
// its stage in the message, under every kind of policy, without hanging.
TEST(RuntimeBehaviour, ThrowingEpilogueStopsTheRun) {
  unsetenv("RRFP_SCHED_LIB");
  Hint h = make_hint("1f1b", {3, 6, 0, 1, 0});
  for (const char* pol : {"rrfp", "rrfp-fixed", "eager", "static-order", "prio", "dmda"}) {
    use_policy(pol);
    auto t0 = std::chrono::steady_clock::now();
    ExecOptions o;
    o.stage_epilogue = [](int s) {
      if (s == 1) throw std::runtime_error("boom");
    };
    try {
      execute(h, [](int) {}, o);
      ADD_FAILURE() << pol << ": no error";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("epilogue of stage 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds_since(t0), 5.0) << pol;
    // The next run is clean.
    o.stage_epilogue = [](int) {};
    EXPECT_NO_THROW(execute(h, [](int) {}, o)) << pol;
  }
}

TEST(RuntimeBehaviour, LinkDelaysAndProfiling) {
  unsetenv("RRFP_SCHED_LIB");
  Hint h = make_hint("1f1b", {3, 4, 0, 0, 0});
  const TaskGraph& g = *h.graph;
  CostOptions c;
  c.unit_ms = 0.2;
  c.link_ms = 3;
  c.link_jitter = 0.2;
  Durations d = draw(g, c);
  use_policy("rrfp");
  ExecOptions o;
  o.link_delay_s = [&](int id, int k) { return d.edge(id, k); };
  o.profile = true;
  ExecResult r = execute(h, [&](int id) { std::this_thread::sleep_for(std::chrono::duration<double>(d.task_s[id])); }, o);
  expect_valid_run(h, r, "rrfp");
  EXPECT_EQ(r.transfers, 2 * 4 * 2);  // F and BW edges between 3 devices
  for (int id = 0; id < g.size(); ++id) {
    int k = 0;
    for (int p : g.preds(id)) {
      double delay = d.edge(id, k++);
      if (delay > 0) {
        EXPECT_GE(r.start_s[id] - r.end_s[p], delay - 1e-4) << g.label(p) << " -> " << g.label(id);
      }
    }
    EXPECT_GE(r.prof_start_s[id], 0);
    EXPECT_GE(r.prof_end_s[id], r.prof_start_s[id]);
  }
  EXPECT_GE(r.makespan_s, lower_bound(g, d).bound * 0.99);
}
