// Tensor parallelism in one process: the members of a device group follow
// the leader's decisions, so every member enters the group's collectives in
// the same order, under random task durations, for every policy that
// supports it; the collective layer itself sums in member order and turns a
// mismatched order into an error instead of a silent wrong sum.
#include "tests/runtime_helpers.hpp"
#include "runtime/session.hpp"
#include <fmt/format.h>

#include <atomic>
#include <thread>

#include "runtime/bench.hpp"
#include "runtime/tp_comm.hpp"

using namespace rrfp;
using namespace rrfp::testing;

TEST(TpComm, SumsInMemberOrderAndLogs) {
  LocalTpComm comm(1, 3, 5);
  std::vector<std::vector<float>> out(3);
  std::vector<std::thread> th;
  for (int m = 0; m < 3; ++m)
    th.emplace_back([&, m] {
      for (int k = 0; k < 50; ++k) {
        std::vector<float> v = {float(m + 1), float(k)};
        comm.allreduce(0, m, collective_id(k, 0), v.data(), v.size());
        if (v[0] != 6.0f || v[1] != 3.0f * k) out[m] = v;  // any wrong sum is kept
      }
    });
  for (auto& t : th) t.join();
  for (int m = 0; m < 3; ++m) {
    EXPECT_TRUE(out[m].empty()) << "member " << m << " got a wrong sum";
    ASSERT_EQ(comm.log(0, m).size(), 50u);
    EXPECT_EQ(comm.log(0, m), comm.log(0, 0));
  }
}

TEST(TpComm, MismatchedOrderIsAnErrorOnEveryMember) {
  LocalTpComm comm(1, 2, 5);
  std::atomic<int> errors{0};
  std::string msg;
  auto member = [&](int m, int task) {
    float x = 1;
    try {
      comm.allreduce(0, m, collective_id(task, 0), &x, 1);
    } catch (const std::exception& e) {
      if (m == 0) msg = e.what();
      ++errors;
    }
  };
  std::thread a(member, 0, 3), b(member, 1, 4);  // member 1 entered another task's collective
  a.join();
  b.join();
  EXPECT_EQ(errors.load(), 2);
  EXPECT_NE(msg.find("collective order mismatch"), std::string::npos) << msg;
}

TEST(TpComm, MissingMemberTimesOut) {
  LocalTpComm comm(1, 2, 0.2);
  float x = 1;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(comm.allreduce(0, 0, collective_id(1, 0), &x, 1), std::runtime_error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// 100 seeded runs under lognormal:0.6: every member of every group logged
// the same collective sequence, complete (two per F/B/BW of its device), and
// each member ran each of its device's tasks exactly once on its own worker.
TEST(TensorParallel, HundredSeededRunsKeepOneCollectiveOrder) {
  unsetenv("RRFP_SCHED_LIB");
  use_policy("rrfp");
  for (const char* hint : {"bfw", "zbv"}) {
    Hint h = make_hint(hint, {2, 8, 0, -1, 0});
    const TaskGraph& g = *h.graph;
    BenchConfig cfg;
    cfg.cost.base = parse_cost("F=1,B=1,W=1");
    cfg.cost.unit_ms = 0.3;
    cfg.cost.var = parse_variability("lognormal:0.6");
    cfg.cost.seed = 7;
    cfg.iterations = 100;
    cfg.exec.tensor_parallel = 2;
    cfg.exec.inflight_slack = 2;
    BenchReport r = run_bench(h, cfg);
    EXPECT_EQ(r.collective_orders_identical, 100) << hint;
    ASSERT_EQ(r.collective_logs.size(), 100u);
    for (int d = 0; d < 2; ++d) {
      size_t expected = 0;
      for (int id : h.order[d]) expected += g.task(id).kind == Kind::W ? 0 : 2;
      for (const auto& it : r.collective_logs) {
        EXPECT_EQ(it[d][0].size(), expected) << hint << ": device " << d;
        EXPECT_EQ(it[d][1], it[d][0]) << hint << ": device " << d << " members disagree";
      }
    }
    const ExecResult& last = r.last;
    ASSERT_EQ(last.member_order.size(), 4u);
    for (int slot = 0; slot < 4; ++slot) {
      auto a = last.member_order[slot], b = h.order[slot / 2];
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << hint << ": slot " << slot << " did not run its device's tasks exactly once";
      EXPECT_EQ(last.member_order[slot], last.order[slot / 2]) << hint << ": member order differs from the leader's";
    }
    expect_within_cap(last, hint);
  }
}

TEST(TensorParallel, EveryOrderKeepingPolicyAndRefusals) {
  unsetenv("RRFP_SCHED_LIB");
  Hint h = make_hint("1f1b", {2, 6, 0, 0, 0});
  for (const char* p : {"rrfp", "rrfp-fixed", "static-order"}) {
    use_policy(p);
    BenchConfig cfg;
    cfg.cost.unit_ms = 0.3;
    cfg.cost.var = parse_variability("lognormal:0.6");
    cfg.iterations = 5;
    cfg.exec.tensor_parallel = 2;
    BenchReport r = run_bench(h, cfg);
    EXPECT_EQ(r.collective_orders_identical, 5) << p;
    if (std::string(p) != "rrfp") {
      EXPECT_EQ(r.last.order, h.order) << p;
    }
  }
  use_policy("eager");
  BenchConfig cfg;
  cfg.exec.tensor_parallel = 2;
  try {
    run_bench(h, cfg);
    FAIL() << "eager accepted tensor parallelism";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("rrfp-wait, rrfp, rrfp-fixed or static-order"), std::string::npos) << e.what();
  }
  use_policy("rrfp");
  cfg.exec.tensor_parallel = max_cpu_workers() / 2 + 1;  // 2 devices x T > STARPU_MAXCPUS workers
  EXPECT_THROW(run_bench(h, cfg), SpecError);
}
