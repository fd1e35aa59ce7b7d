// A byte budget per device on real StarPU workers (ExecOptions::memory_budget,
// sched/memory_budget.hpp): the activation bytes each device holds, measured
// from the recorded start and end of every pass, never exceed the budget
// under the three rrfp policies and random durations; a policy that cannot
// enforce it is refused by name.
#include <fmt/format.h>

#include <memory>
#include <random>

#include "sched/arbiter.hpp"
#include "tests/runtime_helpers.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

std::vector<double> uneven_bytes(const Hint& h) {
  std::vector<double> b;
  for (int s = 0; s < h.spec().stages; ++s) b.push_back(4096.0 * (1 + 2 * (s % 3)));
  return b;
}

// The hint's own byte peak per device: the tightest budget it can run under.
MemoryBudgetOptions tightest(const Hint& h) {
  MemoryBudgetOptions m;
  m.stage_bytes = uneven_bytes(h);
  m.device_bytes.assign(h.devices(), 1e18);
  Arbiter probe(h, ArbiterOptions{Mode::Strict, 0, {}, {}, WaitRule{}, m});
  for (int d = 0; d < h.devices(); ++d) m.device_bytes[d] = probe.memory().hint_peak(d);
  return m;
}

// Bytes held per device over the recorded run: a forward's from its start
// to its backward's end (ends first at equal times, as the worker ran them).
std::vector<double> measured_peaks(const Hint& h, const ExecResult& r, const std::vector<double>& bytes) {
  const TaskGraph& g = *h.graph;
  std::vector<std::vector<std::pair<double, double>>> ev(h.devices());
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    if (t.kind == Kind::F) ev[t.device].push_back({r.start_s[id], bytes[t.stage]});
    else if (is_backward(t.kind)) ev[t.device].push_back({r.end_s[id], -bytes[t.stage]});
  }
  std::vector<double> peak(h.devices(), 0);
  for (int d = 0; d < h.devices(); ++d) {
    std::sort(ev[d].begin(), ev[d].end());
    double cur = 0;
    for (auto& e : ev[d]) peak[d] = std::max(peak[d], cur += e.second);
  }
  return peak;
}

}  // namespace

TEST(RuntimeMemoryBudget, DevicesStayWithinTheirBudgetUnderRandomDurations) {
  unsetenv("RRFP_SCHED_LIB");
  for (const char* policy : {"rrfp", "rrfp-wait", "rrfp-fixed"})
    for (const char* name : {"interleaved-1f1b", "zbv"})
      for (unsigned seed = 1; seed <= 3; ++seed) {
        const Hint h = make_hint(name, {4, 8, std::string(name) == "interleaved-1f1b" ? 2 : 0, -1, 0});
        auto dur = std::make_shared<std::vector<double>>();
        std::mt19937 rng(seed);
        std::lognormal_distribution<double> draw(0.0, 0.8);
        for (int id = 0; id < h.graph->size(); ++id) dur->push_back(0.2 * draw(rng));
        ExecOptions eo;
        eo.policy = policy;
        eo.inflight_slack = 2;  // the count cap leaves room: the budget binds
        eo.memory_budget = tightest(h);
        const ExecResult r = execute(
            h, [dur](int id) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>((*dur)[id])); },
            eo);
        const std::string what = fmt::format("{} on {} seed {}", policy, name, seed);
        expect_valid_run(h, r, what);
        const auto peak = measured_peaks(h, r, eo.memory_budget.stage_bytes);
        for (int d = 0; d < h.devices(); ++d)
          EXPECT_LE(peak[d], eo.memory_budget.device_bytes[d]) << what << ": device " << d << " over its budget";
      }
}

TEST(RuntimeMemoryBudget, APolicyThatCannotEnforceItIsRefused) {
  unsetenv("RRFP_SCHED_LIB");
  const Hint h = make_hint("1f1b", {2, 4, 0, 0, 0});
  ExecOptions eo;
  eo.policy = "eager";
  eo.memory_budget = tightest(h);
  try {
    execute(h, [](int) {}, eo);
    FAIL() << "eager accepted a memory budget it cannot enforce";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("memory budget"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'eager'"), std::string::npos) << e.what();
  }
}
