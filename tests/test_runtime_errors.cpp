// Bad input gives a clear message and a non-zero exit; plug-in policies load
// through RRFP_SCHED_LIB.
#include "tests/cli_run.hpp"
#include "tests/runtime_helpers.hpp"
#include "runtime/session.hpp"
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sched/policy_registry.hpp"

using namespace rrfp;
using namespace rrfp::testing;

namespace {

std::string plugin_path() {
  std::string cli = RRFP_CLI;
  return cli.substr(0, cli.rfind('/')) + "/plugins/librrfp_example_lifo.so";
}

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs the rrfp command; returns its exit status, stderr+stdout in *out.
int run_cli(const std::string& args, std::string* out) {
  CliResult r = ::run_cli(args);
  *out = r.out;
  return r.code;
}

struct EnvGuard {
  EnvGuard() { unsetenv("RRFP_SCHED_LIB"); }
  ~EnvGuard() {
    unsetenv("RRFP_SCHED_LIB");
    unsetenv("STARPU_SCHED");
  }
};

}  // namespace

TEST(RuntimeErrors, UnknownPolicy) {
  EnvGuard g;
  use_policy("no-such-policy");
  Hint h = make_hint("1f1b", {2, 2, 0, 0, 0});
  std::string m = message_of<SpecError>([&] { execute(h, [](int) {}, {}); });
  EXPECT_NE(m.find("unknown scheduling policy 'no-such-policy'"), std::string::npos) << m;
  EXPECT_NE(m.find("rrfp-fixed"), std::string::npos) << m;
}

// StarPU's built-ins that stall or abort on pinned tasks are refused by
// name before StarPU starts (modular-eager used to stall for 50 s).
TEST(RuntimeErrors, BuiltinPoliciesThatCannotRunTheGraphAreRefused) {
  EnvGuard g;
  Hint h = make_hint("1f1b", {2, 2, 0, 0, 0});
  for (const char* name : {"modular-eager", "modular-heft", "modular-dmda", "graph_test"}) {
    use_policy(name);
    std::string m = message_of<SpecError>([&] { execute(h, [](int) {}, {}); });
    EXPECT_NE(m.find(std::string("scheduling policy '") + name + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("usable: rrfp, rrfp-wait"), std::string::npos) << m;
    EXPECT_EQ(m.find("modular-eager,"), std::string::npos) << m;  // not offered as usable
  }
  use_policy("modular-prio");  // one that runs them
  EXPECT_NO_THROW(execute(h, [](int) {}, {}));
}

TEST(RuntimeErrors, MoreDevicesThanWorkers) {
  EnvGuard g;
  use_policy("rrfp");
  const int too_many = max_cpu_workers() + 1;  // STARPU_MAXCPUS: 64 in our StarPU build
  Hint h = make_hint("1f1b", {too_many, too_many, 0, 0, 0});
  std::string m = message_of<SpecError>([&] { execute(h, [](int) {}, {}); });
  EXPECT_NE(m.find(fmt::format("at most {}", max_cpu_workers())), std::string::npos) << m;
}

TEST(RuntimeErrors, PluginPolicyRuns) {
  EnvGuard g;
  setenv("RRFP_SCHED_LIB", plugin_path().c_str(), 1);
  use_policy("example-lifo");
  Hint h = make_hint("1f1b", {3, 6, 0, 1, 0});
  ExecResult r = execute(h, sleep_body(h, 0.2), {});
  EXPECT_EQ(r.policy, "example-lifo");
  expect_valid_run(h, r, "example-lifo");
  unsetenv("STARPU_SCHED");  // NULL name: the plug-in's default policy
  EXPECT_EQ(resolve_policy().name, "example-lifo");
  use_policy("other");
  std::string m = message_of<SpecError>([] { resolve_policy(); });
  EXPECT_NE(m.find("has no policy named 'other'"), std::string::npos) << m;
}

TEST(RuntimeErrors, PluginMissingOrWithoutSymbol) {
  EnvGuard g;
  setenv("RRFP_SCHED_LIB", "/nonexistent/libnothing.so", 1);
  std::string m = message_of<SpecError>([] { resolve_policy(); });
  EXPECT_NE(m.find("cannot load '/nonexistent/libnothing.so'"), std::string::npos) << m;
  setenv("RRFP_SCHED_LIB", "libm.so.6", 1);  // loads, but has no policy symbol
  m = message_of<SpecError>([] { resolve_policy(); });
  EXPECT_NE(m.find("no symbol starpu_get_sched_lib_policy"), std::string::npos) << m;
}

TEST(RuntimeErrors, BenchCommandLine) {
  EnvGuard g;
  std::string out;
  std::string json = ::testing::TempDir() + "rrfp_bench.json", trace = ::testing::TempDir() + "rrfp_trace.json";
  ASSERT_EQ(run_cli("bench --hint bfw --stages 2 --microbatches 4 --unit-ms 0.2 --variability lognormal:0.5 --seed 3 "
                    "--link-ms 0.2 --link-jitter 0.5 --json " + json + " --trace " + trace, &out), 0) << out;
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  for (const char* k : {"policy", "hint", "stages", "devices", "microbatches", "seed", "variability", "tasks",
                        "makespan_s", "lower_bound_s", "makespan_over_lb", "bubble_ratio", "busy_s", "peak_inflight",
                        "inflight_cap"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["policy"], "rrfp-wait");  // the default
  EXPECT_EQ(j["tasks"], 2 * 4 * 3);
  EXPECT_GE(j["makespan_over_lb"].get<double>(), 0.99);
  std::ifstream tin(trace);
  nlohmann::json t = nlohmann::json::parse(tin);
  int slices = 0;
  for (auto& e : t["traceEvents"]) slices += e["ph"] == "X";
  EXPECT_EQ(slices, 24);

  EXPECT_NE(run_cli(fmt::format("bench --stages {} --microbatches 4", max_cpu_workers() + 1), &out), 0);
  EXPECT_NE(out.find(fmt::format("at most {}", max_cpu_workers())), std::string::npos) << out;
  EXPECT_NE(run_cli("bench --stages 2 --microbatches 0", &out), 0);
  EXPECT_NE(out.find("microbatches"), std::string::npos) << out;
  EXPECT_NE(run_cli("bench --stages 2 --microbatches 2 --policy nope", &out), 0);
  EXPECT_NE(out.find("unknown scheduling policy"), std::string::npos) << out;
  EXPECT_NE(run_cli("bench --stages 2 --microbatches 2 --variability gamma:1", &out), 0);
  EXPECT_NE(out.find("unknown model"), std::string::npos) << out;
  EXPECT_NE(run_cli("bench --stages 2 --microbatches 2 --cost F=-1", &out), 0);
  EXPECT_NE(out.find("negative"), std::string::npos) << out;
}
