#include "sim/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace rrfp {

std::vector<SweepPoint> sweep(const std::string& hint, HintParams p, Scenario sc, const std::string& param,
                              const std::vector<double>& values, int seeds) {
  if (seeds < 1) throw SpecError("--seeds must be at least 1");
  static const char* known[] = {"sigma", "bandwidth", "link-ms", "link-jitter", "microbatches", "stages", "slack"};
  if (std::find(std::begin(known), std::end(known), param) == std::end(known))
    throw SpecError(fmt::format(
        "unknown sweep parameter '{}' (sigma, bandwidth, link-ms, link-jitter, microbatches, stages, slack)", param));
  if (param == "sigma" && sc.cost.durations)
    throw SpecError("--param sigma varies the synthetic variability; --durations replays measured durations");
  if (param == "stages" && is_csv_hint(hint))
    throw SpecError(fmt::format("--param stages cannot vary hint '{}': a CSV fixes its stages", hint));
  if (param == "microbatches" && is_csv_hint(hint))
    throw SpecError(fmt::format("--param microbatches cannot vary hint '{}': a CSV fixes its microbatches", hint));
  // A swept value that changes nothing would draw a flat line that looks like a result.
  if (param == "bandwidth" && sc.comm.message_bytes == 0)
    throw SpecError("--param bandwidth needs --message-mb > 0: without a message size no transfer takes time");
  if (param == "link-jitter" && sc.cost.link_ms == 0)
    throw SpecError("--param link-jitter needs --link-ms > 0: it is the jitter of that delay");
  const bool counts = param == "stages" || param == "microbatches" || param == "slack";
  std::vector<SweepPoint> out;
  for (double v : values) {
    if (counts && (v != std::floor(v) || v < 0 || v > 1e5))
      throw SpecError(fmt::format("--param {}: {} is not a count (a whole number from 0 to 100000)", param, v));
    HintParams hp = p;
    Scenario s = sc;
    if (param == "sigma") s.cost.var = parse_variability(fmt::format("lognormal:{}", v));
    if (param == "bandwidth") {  // Gbit/s, as --bandwidth-gbps (0: infinite)
      check_link_gbps(v, "--param bandwidth value");
      s.comm.bandwidth_Bps = v > 0 ? v * 1e9 / 8 : std::numeric_limits<double>::infinity();
    }
    if (param == "link-ms") s.cost.link_ms = v;
    if (param == "link-jitter") s.cost.link_jitter = v;
    if (param == "stages") hp.stages = static_cast<int>(v);
    if (param == "microbatches") hp.microbatches = static_cast<int>(v);
    if (param == "slack") s.inflight_slack = static_cast<int>(v);
    Hint h = make_hint(hint, hp);
    SweepPoint pt{v, 0, 1e300, 0};
    for (int k = 0; k < seeds; ++k) {
      s.cost.seed = sc.cost.seed + k;
      // A run that stalls has no makespan: the sweep fails as `rrfp sim` does.
      auto makespan = [&](Mode m, const char* name) {
        s.mode = m;
        const SimResult r = run_scenario(h, s).sim;
        if (!r.complete)
          throw SpecError(fmt::format("{} = {}, seed {}: the run stalls under {}: {}", param, v, s.cost.seed, name,
                                      r.stuck));
        return r.makespan;
      };
      const double fixed = makespan(Mode::Strict, "rrfp-fixed");
      // The policy compared with the fixed order.
      const double rf = makespan(sc.mode == Mode::Strict ? Mode::ReadinessFirst : sc.mode, "the compared policy");
      double r = fixed / rf;
      pt.speedup += r / seeds;
      pt.min_speedup = std::min(pt.min_speedup, r);
      pt.max_speedup = std::max(pt.max_speedup, r);
    }
    out.push_back(pt);
  }
  return out;
}

}  // namespace rrfp
