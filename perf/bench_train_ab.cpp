// Training ratios measured step by step in one process.
// Default (issue 4's targets):
//   S=1 overhead   runtime S=1 step / plain LibTorch loop step (both on CPU 0)
//   S=2 speed-up   S=1 step / S=2 step (same tokens a step: = tokens/s ratio)
//   memory         stage-0 activation peak, 1F1B / GPipe (S=2)
// --policies A,B,...: the same S=2 training under each policy, step time of
// each against the first (e.g. rrfp-fixed / rrfp on mm-tiny, whose encoder
// cost varies from microbatch to microbatch).
// --policies ... --clip-grad X: each policy also with --clip-grad X, whose
// updates wait for the model's norm after the graph: clipped / unclipped
// (with --tensor-parallel T too: every member's updates after the graph).
// --dp-vs-pp: the 2 workers as 2 pipeline stages (--hint) or as 2
// data-parallel replicas of one stage, the same M microbatches a step:
// pipeline / data-parallel step time.
// --plan PLAN: a tuned plan (rrfp tune) against --zoo-hints on the even
// partition: best hint / plan step time, and predicted / measured steps.
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
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "drivers/env_config.hpp"
#include "runtime/session.hpp"
#include "hints/generators.hpp"
#include "sim/tuner.hpp"
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

// Per round: a's step time / b's.
std::vector<double> step_ratio(const Config& a, const Config& b) {
  std::vector<double> v;
  for (size_t r = 0; r < a.steps.size(); ++r) v.push_back(a.steps[r].step_s / b.steps[r].step_s);
  return v;
}

double median_step_ms(const Config& c) {
  std::vector<double> t;
  for (auto& s : c.steps) t.push_back(s.step_s * 1e3);
  return median(t);
}

double median_bubble(const Config& c) {
  std::vector<double> b;
  for (auto& s : c.steps) b.push_back(s.bubble_ratio);
  return median(b);
}

std::string list(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format(" {:.3f}", x);
  return s;
}

struct Args {
  int rounds = 12, warmup = 1, M = 8, b = 4;
  std::string s2_hints = "1f1b";
  std::vector<std::string> s1_also;
  std::vector<std::string> policies;
  std::string model = "gpt-tiny", hint = "1f1b", seq_len_dist = "fixed";
  int layers = 4, enc_layers = 2;
  std::string mlp_widths, plan;  // --plan: the tuned plan against --zoo-hints on the even partition
  std::string even_profile;      // --plan: the hints' predictions from this profile (default: the plan's)
  std::vector<std::string> zoo_hints = {"1f1b", "zb-h1", "interleaved-1f1b", "zbv", "chimera"};
  double clip_grad = 0;  // with --policies: each policy also with this --clip-grad
  int tensor_parallel = 1;  // with --policies: rrfp train --tensor-parallel
  bool quiet = false;
  bool dp_vs_pp = false;  // 2 stages against 2 data-parallel replicas of one
};

// One step of every configuration a round, in an order that rotates every
// round; StarPU restarted before each step, outside its time.
void run_rounds(std::vector<Config>& cfgs, const Args& a) {
  cpu_set_t all;
  sched_getaffinity(0, sizeof all, &all);
  for (auto& c : cfgs) c.trainer = std::make_unique<Trainer>(c.opt);
  const size_t n = cfgs.size();
  for (int r = 0; r < a.warmup + a.rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      Config& c = cfgs[(k + r) % n];
      StarpuSession::close_reused();
      pin_main_thread(c.pin_cpu0, all);
      StepRecord rec = c.trainer->step();
      if (r >= a.warmup) c.steps.push_back(rec);
    }
    if (!a.quiet && r >= a.warmup) {
      fmt::print(stderr, "round {}/{}:", r - a.warmup + 1, a.rounds);
      for (auto& c : cfgs) fmt::print(stderr, "  {} {:.0f} ms", c.name, c.steps.back().step_s * 1e3);
      fmt::print(stderr, "\n");
    }
  }
  StarpuSession::close_reused();
  pin_main_thread(false, all);
}

TrainOptions base_options(const Args& a) {
  TrainOptions o;
  o.model = a.model;
  o.gpt.layers = a.layers;
  o.enc_layers = a.enc_layers;
  o.seq_len_dist = a.seq_len_dist;
  if (!a.mlp_widths.empty()) o.gpt.mlp_widths = parse_int_list(a.mlp_widths, "--mlp-widths");
  o.microbatches = a.M;
  o.micro_batch_size = a.b;
  o.deterministic = true;  // every configuration computes the same losses
  o.steps = a.warmup + a.rounds;
  o.inflight_slack = rrfp::cli::inflight_slack_from_env();  // RRFP_INFLIGHT_SLACK, as for rrfp train
  return o;
}

Config config(std::string name, TrainOptions opt, int stages, std::string hint, std::string executor, bool pin) {
  Config c;
  c.name = std::move(name);
  c.opt = std::move(opt);
  c.opt.stages = stages;
  c.opt.hint = std::move(hint);
  c.opt.executor = std::move(executor);
  c.pin_cpu0 = pin;
  return c;
}

// --policies: S=2 under each policy; step time against the first policy's.
int policy_ratios(const Args& a) {
  std::vector<Config> cfgs;
  const size_t per = a.clip_grad > 0 ? 2 : 1;  // per policy: unclipped, then clipped
  TrainOptions base = base_options(a);
  base.tensor_parallel = a.tensor_parallel;
  for (const auto& p : a.policies) {
    cfgs.push_back(config(p, base, 2, a.hint, "starpu", false));
    cfgs.back().opt.policy = p;
    if (per == 2) {
      cfgs.push_back(config(p + "+clip", base, 2, a.hint, "starpu", false));
      cfgs.back().opt.policy = p;
      cfgs.back().opt.clip_grad = a.clip_grad;
    }
  }
  run_rounds(cfgs, a);
  fmt::print("{} measured rounds of one step each (after {} warm-up): {} S=2 {}, M={} microbatches of {}, "
             "--deterministic{}\n",
             a.rounds, a.warmup, a.model, a.hint, a.M, a.b,
             a.tensor_parallel > 1 ? fmt::format(", --tensor-parallel {}", a.tensor_parallel) : "");
  for (auto& c : cfgs)
    fmt::print("  {:<12} median step {:7.1f} ms  bubble {:.3f}\n", c.name, median_step_ms(c), median_bubble(c));
  for (size_t k = 1; k < cfgs.size(); ++k) {
    const Config& base = cfgs[k % per == 0 ? 0 : k - 1];  // another policy: the first; clipped: its own policy
    const auto r = step_ratio(cfgs[k], base);
    fmt::print("{} / {} step time: {:.3f}  rounds:{}\n", cfgs[k].name, base.name, median(r), list(r));
  }
  bool same = true;  // among the unclipped runs, and among the clipped ones
  for (size_t k = per; k < cfgs.size(); ++k)
    for (int r = 0; r < a.rounds; ++r) same = same && cfgs[k].steps[r].loss == cfgs[k % per].steps[r].loss;
  if (cfgs.size() > per)
    fmt::print("losses equal across policies (bitwise): {}\n", same ? "yes" : "NO");
  else
    fmt::print("losses equal across policies: n/a (one policy)\n");
  return same ? 0 : 1;
}

// Issue 4's S=1 overhead, S=2 speed-up and 1F1B / GPipe memory.
int issue4_ratios(const Args& a) {
  const int M = a.M, b = a.b, rounds = a.rounds;
  const TrainOptions base = base_options(a);
  std::vector<Config> cfgs;
  cfgs.push_back(config("plain loop, CPU 0", base, 1, "1f1b", "plain", true));
  cfgs.push_back(config("S=1 1f1b, CPU 0", base, 1, "1f1b", "starpu", true));
  cfgs.push_back(config("S=1 1f1b", base, 1, "1f1b", "starpu", false));
  for (const std::string& mb : a.s1_also) {
    TrainOptions o = base;
    if (std::sscanf(mb.c_str(), "%dx%d", &o.microbatches, &o.micro_batch_size) != 2 || o.microbatches < 1 ||
        o.micro_batch_size < 1 || o.microbatches * o.micro_batch_size != M * b) {
      std::fprintf(stderr, "error: --s1-also '%s' is not MxB with M*B = %d sequences\n", mb.c_str(), M * b);
      return 2;
    }
    cfgs.push_back(config(fmt::format("S=1 1f1b {}", mb), o, 1, "1f1b", "starpu", false));
  }
  const size_t first_s2 = cfgs.size();
  for (size_t at = 0; at <= a.s2_hints.size();) {
    const size_t comma = std::min(a.s2_hints.find(',', at), a.s2_hints.size());
    const std::string h = a.s2_hints.substr(at, comma - at);
    cfgs.push_back(config("S=2 " + h, base, 2, h, "starpu", false));
    at = comma + 1;
  }
  run_rounds(cfgs, a);
  const size_t n = cfgs.size();

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
             "unless named, --deterministic, policy {}\n",
             rounds, a.warmup, M, b, std::getenv("STARPU_SCHED") ? std::getenv("STARPU_SCHED") : "rrfp");
  for (auto& c : cfgs) fmt::print("  {:<20} median step {:7.1f} ms\n", c.name, median_step_ms(c));
  const auto over = step_ratio(cfgs[1], cfgs[0]);
  fmt::print("S=1 overhead (runtime / plain loop, CPU 0): {:.3f}  (target <= 1.05)  rounds:{}\n", median(over),
             list(over));
  for (size_t k = first_s2; k < n; ++k) {
    std::vector<double> par;  // pass time summed over devices / step time
    for (auto& s : cfgs[k].steps) par.push_back(s.busy_s / s.step_s);
    for (size_t one = 2; one < first_s2; ++one) {
      const auto sp = step_ratio(cfgs[one], cfgs[k]);
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
}

// --dp-vs-pp: one step holds M microbatches either way; the replicas run
// M/2 each on one stage holding the whole model.
int dp_ratios(const Args& a) {
  if (a.M % 2 != 0) {
    std::fprintf(stderr, "error: --dp-vs-pp splits --microbatches %d over 2 replicas: give an even count\n", a.M);
    return 2;
  }
  const TrainOptions base = base_options(a);
  std::vector<Config> cfgs;
  cfgs.push_back(config("S=2 " + a.hint, base, 2, a.hint, "starpu", false));
  TrainOptions dp = base;
  dp.data_parallel = 2;
  dp.microbatches = a.M / 2;
  cfgs.push_back(config("S=1 x DP 2", dp, 1, "1f1b", "starpu", false));
  run_rounds(cfgs, a);
  fmt::print("{} measured rounds of one step each (after {} warm-up): {}, M={} microbatches of {} a step, policy {}\n",
             a.rounds, a.warmup, a.model, a.M, a.b,
             std::getenv("STARPU_SCHED") ? std::getenv("STARPU_SCHED") : "rrfp-wait");
  for (auto& c : cfgs)
    fmt::print("  {:<14} median step {:7.1f} ms  bubble {:.3f}\n", c.name, median_step_ms(c), median_bubble(c));
  const auto r = step_ratio(cfgs[0], cfgs[1]);
  fmt::print("pipeline / data-parallel step time: {:.3f}  rounds:{}\n", median(r), list(r));
  bool same = true;
  for (int q = 0; q < a.rounds; ++q) same = same && cfgs[0].steps[q].loss == cfgs[1].steps[q].loss;
  fmt::print("losses equal (bitwise): {}\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}

// --plan: the tuned plan and each zoo hint on the even partition over all
// the plan's devices (a replicated plan's replicas included), the
// same model and microbatches; best zoo / plan step time, and the plan's
// (and each hint's) predicted step against the measured one.
int plan_ratios(const Args& a) {
  const Plan plan = read_plan(a.plan);
  // The hints run whole devices: a plan of groups cannot predict them.
  if (plan.tensor_parallel > 1 && a.even_profile.empty())
    throw SpecError("--plan of tensor-parallel groups: give --even-profile (a profile without --tensor-parallel) "
                    "for the hints' predictions");
  const ModelProfile prof = read_profile(a.even_profile.empty() ? plan.profile : a.even_profile);
  if (prof.tensor_parallel != 1)
    throw SpecError(fmt::format("--even-profile '{}' measured tensor-parallel groups; the hints run whole devices",
                                prof.source));
  if (prof.model != plan.model || !same_model_config(prof.config, plan.config) ||
      prof.micro_batch_size != plan.micro_batch_size)
    throw SpecError(fmt::format("--even-profile '{}' is of {} {} (micro-batch size {}), the plan of {} {} ({})",
                                prof.source, prof.model, prof.config.dump(), prof.micro_batch_size, plan.model,
                                plan.config.dump(), plan.micro_batch_size));
  std::vector<Config> cfgs;
  TrainOptions base = base_options(a);
  // A plan of D data-parallel replicas of T-member groups against the
  // hints on all its workers and every replica's microbatches.
  const int devices = plan.devices * plan.data_parallel * plan.tensor_parallel;
  const int microbatches = plan.microbatches * plan.data_parallel;
  base.microbatches = microbatches;
  {
    Config c = config("plan", base, plan.devices, "", "starpu", false);
    c.opt.plan_path = a.plan;
    cfgs.push_back(std::move(c));
  }
  std::vector<double> predicted = {plan.predicted_step_s};
  for (const std::string& h : a.zoo_hints) {
    HintParams hp;
    hp.stages = devices;
    hp.microbatches = microbatches;
    hp.chunks = h == "interleaved-1f1b" ? 2 : 0;  // the zoo's one hint without a default chunk count
    const Hint hint = make_hint(h, hp);
    cfgs.push_back(config(h, base, devices, h, "starpu", false));
    cfgs.back().opt.chunks = hp.chunks;
    const StepEstimate e = estimate_even(prof, hint, plan_objective(plan));
    predicted.push_back(e.complete ? e.step_s : 0);
  }
  run_rounds(cfgs, a);
  fmt::print("{} measured rounds of one step each (after {} warm-up): {} S={} M={} microbatches of {}, policy {}\n",
             a.rounds, a.warmup, a.model, devices, microbatches, a.b,
             std::getenv("STARPU_SCHED") ? std::getenv("STARPU_SCHED") : "rrfp-wait");
  fmt::print("plan: {}{} {} partition {}{} (tuned on {})\n",
             plan.data_parallel > 1 ? fmt::format("{} data-parallel replicas of ", plan.data_parallel) : "",
             plan.placement, plan.schedule, fmt::join(plan.counts, ","),
             plan.tensor_parallel > 1 ? fmt::format(", devices of {} tensor-parallel members", plan.tensor_parallel)
                                      : "",
             plan.profile);
  size_t best = 1;
  for (size_t k = 0; k < cfgs.size(); ++k) {
    const double m = median_step_ms(cfgs[k]);
    fmt::print("  {:<18} median step {:7.2f} ms  predicted {:7.2f} ms  predicted/measured {:.3f}\n",
               k == 0 ? "plan" : cfgs[k].name + " (even)", m, predicted[k] * 1e3, predicted[k] * 1e3 / m);
    if (k > 0 && m < median_step_ms(cfgs[best])) best = k;
  }
  const auto r = step_ratio(cfgs[best], cfgs[0]);
  fmt::print("best even-partition hint {} / plan step time: {:.3f}  (goal >= 1.15)  rounds:{}\n", cfgs[best].name,
             median(r), list(r));
  fmt::print("plan predicted / measured step: {:.3f}  (goal within 10%)\n",
             predicted[0] * 1e3 / median_step_ms(cfgs[0]));
  // Tensor-parallel members sum their partial products in another order
  // than one device: equal within rounding, not bitwise.
  const double tol = plan.tensor_parallel > 1 ? 1e-5 : 0;
  bool same = true;
  for (size_t k = 1; k < cfgs.size(); ++k)
    for (int q = 0; q < a.rounds; ++q)
      same = same && std::abs(cfgs[k].steps[q].loss - cfgs[0].steps[q].loss) <= tol * std::abs(cfgs[0].steps[q].loss);
  fmt::print("losses equal across partitions and hints ({}): {}\n",
             tol > 0 ? "within 1e-5, tensor-parallel sums round differently" : "bitwise", same ? "yes" : "NO");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training ratios measured step by step in one process (perf/RESULTS.md)"};
  Args a;
  app.add_option("--rounds", a.rounds, "measured rounds (one step of every configuration each)")->capture_default_str();
  app.add_option("--warmup", a.warmup, "unmeasured rounds first")->capture_default_str();
  app.add_option("--microbatches", a.M, "microbatches a step")->capture_default_str();
  app.add_option("--micro-batch-size", a.b, "sequences a microbatch")->capture_default_str();
  app.add_option("--s2-hints", a.s2_hints, "comma-separated hints to run at S=2 (each compared with S=1 1f1b)")
      ->capture_default_str();
  app.add_option("--s1-also", a.s1_also,
                 "more S=1 baselines with other microbatching, as MxB (e.g. 8x4: 8 microbatches of 4 sequences); "
                 "must give the same sequences a step")
      ->delimiter(',');
  app.add_option("--policies", a.policies,
                 "instead: S=2 training under each of these policies, step time against the first "
                 "(e.g. rrfp,rrfp-fixed)")
      ->delimiter(',');
  app.add_option("--clip-grad", a.clip_grad,
                 "with --policies: each policy also with this rrfp train --clip-grad (updates after the graph)");
  app.add_option("--tensor-parallel", a.tensor_parallel, "with --policies: members per device (rrfp train --tensor-parallel)")
      ->capture_default_str();
  app.add_option("--model", a.model, "gpt-tiny or mm-tiny")->capture_default_str();
  app.add_option("--hint", a.hint, "with --policies: the S=2 hint")->capture_default_str();
  app.add_option("--seq-len-dist", a.seq_len_dist, "gpt-tiny sequence lengths (rrfp train --seq-len-dist)")
      ->capture_default_str();
  app.add_option("--layers", a.layers, "language blocks")->capture_default_str();
  app.add_option("--enc-layers", a.enc_layers, "mm-tiny: vision encoder blocks")->capture_default_str();
  app.add_option("--mlp-widths", a.mlp_widths, "gpt-tiny: MLP width of each block (rrfp train --mlp-widths)");
  app.add_option("--plan", a.plan, "instead: this tuned plan (rrfp tune) against --zoo-hints on the even partition");
  app.add_option("--zoo-hints", a.zoo_hints, "with --plan: the hints it is compared with")->delimiter(',');
  app.add_option("--even-profile", a.even_profile,
                 "with --plan: predict the hints from this profile (default: the plan's; needed for a plan of "
                 "tensor-parallel groups)");
  app.add_flag("--quiet", a.quiet, "no progress line per round");
  app.add_flag("--dp-vs-pp", a.dp_vs_pp, "instead: 2 stages (--hint) against 2 data-parallel replicas of one stage");
  CLI11_PARSE(app, argc, argv);
  if (a.clip_grad != 0 && (a.policies.empty() || !(a.clip_grad > 0))) {
    std::fprintf(stderr, "error: --clip-grad takes a norm > 0 and goes with --policies\n");
    return 2;
  }
  if (a.tensor_parallel != 1 && (a.policies.empty() || a.tensor_parallel < 1)) {
    std::fprintf(stderr, "error: --tensor-parallel takes a count >= 1 and goes with --policies\n");
    return 2;
  }
  if (a.rounds < 1 || a.warmup < 0) {
    std::fprintf(stderr, "error: --rounds must be at least 1 and --warmup not negative\n");
    return 2;
  }
  setenv("STARPU_WORKERS_NOBIND", "1", 0);  // workers inherit the affinity set here
  setenv("STARPU_SILENT", "1", 0);
  try {
    if (!a.even_profile.empty() && a.plan.empty()) throw SpecError("--even-profile goes with --plan");
    if (!a.plan.empty()) return plan_ratios(a);
    if (a.dp_vs_pp) return dp_ratios(a);
    return a.policies.empty() ? issue4_ratios(a) : policy_ratios(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
