// Training ratios of issue 4 measured step by step in one process:
//   S=1 overhead   runtime S=1 step / plain LibTorch loop step (both on CPU 0)
//   S=2 speed-up   S=1 step / S=2 step (same tokens a step: = tokens/s ratio)
//   memory         stage-0 activation peak, 1F1B / GPipe (S=2)
//
// Why step by step: this machine's two vCPUs change speed within seconds,
// so whole runs measured one after the other compare different machines.
// Here every configuration is its own Trainer (same seed, same data) and one
// round trains one step of each, in an order that rotates every round; each
// ratio is taken within a round (steps a second apart) and the median over
// rounds is reported. StarPU is restarted before every step outside the
// timed part, so no configuration's idle workers poll during another's step
// and the pinned ones start their workers on CPU 0.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.hpp"
#include "train/trainer.hpp"

using namespace rrfp;
using namespace rrfp::train;

namespace {

struct Config {
  std::string name;
  TrainOptions opt;
  bool pin_cpu0 = false;
  std::unique_ptr<Trainer> trainer;
  std::vector<StepRecord> steps;  // measured rounds (warm-up left out)
};

// The calling thread (and the StarPU workers it starts next) on CPU 0, or on
// every CPU the process may use.
void pin_main_thread(bool cpu0, const cpu_set_t& all) {
  cpu_set_t set = all;
  if (cpu0) {
    CPU_ZERO(&set);
    CPU_SET(0, &set);
  }
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    std::fprintf(stderr, "warning: could not set the CPU affinity; ratios are unpinned\n");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::string list(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format(" {:.3f}", x);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Issue 4's training ratios, measured step by step in one process (perf/RESULTS.md)"};
  int rounds = 12, warmup = 1, M = 8, b = 4;
  std::string s2_hints = "1f1b";
  std::vector<std::string> s1_also;
  bool quiet = false;
  app.add_option("--rounds", rounds, "measured rounds (one step of every configuration each)")->capture_default_str();
  app.add_option("--warmup", warmup, "unmeasured rounds first")->capture_default_str();
  app.add_option("--microbatches", M, "microbatches a step")->capture_default_str();
  app.add_option("--micro-batch-size", b, "sequences a microbatch")->capture_default_str();
  app.add_option("--s2-hints", s2_hints, "comma-separated hints to run at S=2 (each compared with S=1 1f1b)")
      ->capture_default_str();
  app.add_option("--s1-also", s1_also,
                 "more S=1 baselines with other microbatching, as MxB (e.g. 8x4: 8 microbatches of 4 sequences); "
                 "must give the same sequences a step")
      ->delimiter(',');
  app.add_flag("--quiet", quiet, "no progress line per round");
  CLI11_PARSE(app, argc, argv);
  if (rounds < 1 || warmup < 0) {
    std::fprintf(stderr, "error: --rounds must be at least 1 and --warmup not negative\n");
    return 2;
  }
  setenv("STARPU_WORKERS_NOBIND", "1", 0);  // workers inherit the affinity set here
  setenv("STARPU_SILENT", "1", 0);
  cpu_set_t all;
  sched_getaffinity(0, sizeof all, &all);

  TrainOptions base;
  base.microbatches = M;
  base.micro_batch_size = b;
  base.deterministic = true;  // every configuration computes the same losses
  base.steps = warmup + rounds;
  std::vector<Config> cfgs;
  auto add = [&](std::string name, int stages, std::string hint, std::string executor, bool pin,
                 TrainOptions opt) {
    Config c;
    c.name = std::move(name);
    c.opt = opt;
    c.opt.stages = stages;
    c.opt.hint = std::move(hint);
    c.opt.executor = std::move(executor);
    c.pin_cpu0 = pin;
    cfgs.push_back(std::move(c));
  };
  add("plain loop, CPU 0", 1, "1f1b", "plain", true, base);
  add("S=1 1f1b, CPU 0", 1, "1f1b", "starpu", true, base);
  add("S=1 1f1b", 1, "1f1b", "starpu", false, base);
  for (const std::string& mb : s1_also) {
    TrainOptions o = base;
    if (std::sscanf(mb.c_str(), "%dx%d", &o.microbatches, &o.micro_batch_size) != 2 || o.microbatches < 1 ||
        o.micro_batch_size < 1 || o.microbatches * o.micro_batch_size != M * b) {
      std::fprintf(stderr, "error: --s1-also '%s' is not MxB with M*B = %d sequences\n", mb.c_str(), M * b);
      return 2;
    }
    add(fmt::format("S=1 1f1b {}", mb), 1, "1f1b", "starpu", false, o);
  }
  const size_t first_s2 = cfgs.size();
  for (size_t at = 0; at <= s2_hints.size();) {
    const size_t comma = std::min(s2_hints.find(',', at), s2_hints.size());
    add("S=2 " + s2_hints.substr(at, comma - at), 2, s2_hints.substr(at, comma - at), "starpu", false, base);
    at = comma + 1;
  }
  try {
    for (auto& c : cfgs) c.trainer = std::make_unique<Trainer>(c.opt);
    const size_t n = cfgs.size();
    for (int r = 0; r < warmup + rounds; ++r) {
      for (size_t k = 0; k < n; ++k) {
        Config& c = cfgs[(k + r) % n];  // rotate who goes first
        StarpuSession::close_reused();
        pin_main_thread(c.pin_cpu0, all);
        StepRecord rec = c.trainer->step();
        if (r >= warmup) c.steps.push_back(rec);
      }
      if (!quiet && r >= warmup) {
        fmt::print(stderr, "round {}/{}:", r - warmup + 1, rounds);
        for (auto& c : cfgs) fmt::print(stderr, "  {} {:.0f} ms", c.name, c.steps.back().step_s * 1e3);
        fmt::print(stderr, "\n");
      }
    }
    StarpuSession::close_reused();
    pin_main_thread(false, all);

    // Memory: one GPipe step at S=2 against the 1F1B one (bytes, not time).
    TrainOptions gp = base;
    gp.stages = 2;
    gp.hint = "gpipe";
    gp.steps = 1;
    const std::int64_t gpipe0 = rrfp::train::train(gp).steps[0].peak_activation_per_stage[0];
    std::int64_t f1b0 = 0;
    for (size_t k = first_s2; k < n; ++k)
      if (cfgs[k].opt.hint == "1f1b")
        for (auto& s : cfgs[k].steps) f1b0 = std::max(f1b0, s.peak_activation_per_stage[0]);

    fmt::print("{} measured rounds of one step each (after {} warm-up), M={} microbatches of {} sequences "
               "unless named, "
               "--deterministic, policy {}\n",
               rounds, warmup, M, b, std::getenv("STARPU_SCHED") ? std::getenv("STARPU_SCHED") : "rrfp");
    for (auto& c : cfgs) {
      std::vector<double> t;
      for (auto& s : c.steps) t.push_back(s.step_s * 1e3);
      fmt::print("  {:<20} median step {:7.1f} ms\n", c.name, median(t));
    }
    auto ratio = [&](size_t num, size_t den) {
      std::vector<double> v;
      for (int r = 0; r < rounds; ++r) v.push_back(cfgs[num].steps[r].step_s / cfgs[den].steps[r].step_s);
      return v;
    };
    const auto over = ratio(1, 0);
    fmt::print("S=1 overhead (runtime / plain loop, CPU 0): {:.3f}  (target <= 1.05)  rounds:{}\n", median(over),
               list(over));
    for (size_t k = first_s2; k < n; ++k) {
      std::vector<double> par;  // pass time summed over devices / step time
      for (auto& s : cfgs[k].steps) par.push_back(s.busy_s / s.step_s);
      for (size_t one = 2; one < first_s2; ++one) {
        const auto sp = ratio(one, k);
        fmt::print("{} / {} tokens/s: {:.3f}  (target >= 1.6)  rounds:{}\n", cfgs[k].name, cfgs[one].name,
                   median(sp), list(sp));
      }
      // S=2 / S=1 = (how fast the passes run two at a time against one at
      // a time: the machine) x (S=2 parallelism: the schedule and runtime).
      std::vector<double> speed;
      for (int r = 0; r < rounds; ++r) speed.push_back(cfgs[2].steps[r].busy_s / cfgs[k].steps[r].busy_s);
      fmt::print("  = passes' speed two at a time vs one {:.3f}  x  parallelism (pass time summed over devices / "
                 "step time) {:.3f}\n",
                 median(speed), median(par));
    }
    if (f1b0 > 0)
      fmt::print("stage-0 peak activation 1F1B / GPipe: {}/{} = {:.3f}  (S/M = {:.3f})\n", f1b0, gpipe0,
                 static_cast<double>(f1b0) / gpipe0, 2.0 / M);
    // Same microbatches: bitwise the plain loop's losses (--deterministic);
    // other microbatching sums the loss in another order: within 1e-5.
    bool same = true;
    for (size_t k = 1; k < n; ++k)
      for (int r = 0; r < rounds; ++r) {
        const double a = cfgs[k].steps[r].loss, p = cfgs[0].steps[r].loss;
        const bool split_alike = cfgs[k].opt.microbatches == M;
        same = same && (split_alike ? a == p : std::abs(a - p) <= 1e-5 * std::abs(p));
      }
    fmt::print("losses == plain loop (bitwise; other microbatching within 1e-5): {}\n", same ? "yes" : "NO");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
