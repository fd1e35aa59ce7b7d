// Every policy runs graphs from every hint to completion on real StarPU
// workers: each task once, on its device's worker, after its inputs; rrfp
// policies stay within the in-flight cap; strict policies follow the hint.
#include <fmt/format.h>

#include "runtime/bench.hpp"
#include "tests/runtime_helpers.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

std::vector<Hint> all_hints() {
  std::vector<Hint> out;
  for (const HintInfo& info : hint_registry()) {
    for (int split : {-1, 1}) {
      if (split == 1 && (info.name == "gpipe" || info.name == "1f1b")) continue;  // both forms below
      try {
        Hint h = make_hint(info.name, {4, 8, 0, split, 0});
        if (h.devices() <= 4) out.push_back(std::move(h));
      } catch (const SpecError&) {
      }
      if (split == -1) break;
    }
  }
  out.push_back(make_hint("1f1b", {3, 6, 0, 1, 0}));   // split backward, 3 devices
  out.push_back(make_hint("gpipe", {2, 4, 0, 1, 0}));  // split backward, 2 devices
  return out;
}

// The per-stage epilogue ran once per stage, on the worker of the stage's
// device, after every W/BW task of the stage.
void expect_epilogues(const Hint& h, const ExecResult& r, const std::vector<int>& calls, const std::string& what) {
  const TaskGraph& g = *h.graph;
  const int P = g.spec().stages;
  ASSERT_EQ(static_cast<int>(r.epilogue_worker.size()), P) << what;
  for (int s = 0; s < P; ++s) {
    EXPECT_EQ(calls[s], 1) << what << ": epilogue of stage " << s;
    EXPECT_EQ(r.epilogue_worker[s], r.device_worker[g.spec().device_of(s, 0)]) << what << ": epilogue of stage " << s;
    for (int id = 0; id < g.size(); ++id) {
      const Task& t = g.task(id);
      if (t.stage == s && (t.kind == Kind::W || t.kind == Kind::BW)) {
        EXPECT_GE(r.epilogue_start_s[s], r.end_s[id]) << what << ": epilogue of stage " << s << " before " << g.label(id);
      }
    }
  }
}

void run_policy(const std::string& policy) {
  unsetenv("RRFP_SCHED_LIB");
  use_policy(policy);
  auto hints = all_hints();
  ASSERT_GE(hints.size(), 4u);
  for (const Hint& h : hints) {
    std::string what = policy + " on " + h.name + " (" + std::to_string(h.devices()) + " devices)";
    ExecOptions o;
    o.link_delay_s = [](int, int) { return 0.0001; };
    const int P = h.graph->spec().stages;
    std::vector<int> calls(P, 0);
    o.stage_epilogue = [&](int s) { ++calls[s]; };  // each on its own worker: no race on one entry
    ExecResult r;
    try {
      r = execute(h, sleep_body(h, 0.2), o);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
      continue;
    }
    EXPECT_EQ(r.policy, policy);
    expect_valid_run(h, r, what);
    expect_epilogues(h, r, calls, what);
    if (policy == "rrfp" || policy == "rrfp-wait" || policy == "rrfp-fixed") expect_within_cap(r, what);
    if (policy == "rrfp-fixed" || policy == "static-order") {
      EXPECT_EQ(r.order, h.order) << what << ": not the hint's order";
    }
  }
}

}  // namespace

TEST(RuntimePolicies, Rrfp) { run_policy("rrfp"); }
TEST(RuntimePolicies, RrfpFixed) { run_policy("rrfp-fixed"); }
TEST(RuntimePolicies, RrfpWait) { run_policy("rrfp-wait"); }

// rrfp-wait on real workers with random durations and link delays, where its
// clock readings and waits matter: every run completes within its caps.
TEST(RuntimePolicies, RrfpWaitRandomDurations) {
  unsetenv("RRFP_SCHED_LIB");
  long waits = 0;
  for (const char* hint : {"1f1b", "zb-h1", "interleaved-1f1b", "zbv"})
    for (int seed = 1; seed <= 6; ++seed) {
      BenchConfig cfg;
      cfg.cost.unit_ms = 0.3;
      cfg.cost.var = parse_variability(seed % 2 ? "lognormal:0.6" : "multimodal:1.0");
      cfg.cost.link_ms = 0.15;
      cfg.cost.link_jitter = 0.9;
      cfg.cost.seed = seed;
      cfg.exec.policy = "rrfp-wait";
      cfg.exec.inflight_slack = seed % 3;
      cfg.exec.wait = {1.0, 1.0};  // waits often
      Hint h = make_hint(hint, {4, 8, std::string(hint) == "interleaved-1f1b" ? 2 : 0, -1, 0});
      BenchReport r = run_bench(h, cfg);
      const std::string what = fmt::format("rrfp-wait on {} seed {}", hint, seed);
      EXPECT_EQ(r.policy, "rrfp-wait") << what;
      EXPECT_GT(r.makespan_s, 0) << what;
      for (int d = 0; d < h.devices(); ++d) EXPECT_LE(r.peak_inflight[d], r.inflight_cap[d]) << what;
      expect_valid_run(h, r.last, what);
      waits += r.waits;
    }
  EXPECT_GT(waits, 0);  // the policy did wait: the idle path's clock check was exercised
}
TEST(RuntimePolicies, StaticOrder) { run_policy("static-order"); }
TEST(RuntimePolicies, Eager) { run_policy("eager"); }
TEST(RuntimePolicies, Prio) { run_policy("prio"); }
TEST(RuntimePolicies, Dmda) { run_policy("dmda"); }
