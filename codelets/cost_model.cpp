#include "codelets/cost_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "codelets/splitmix.hpp"

namespace rrfp {

namespace {

// Counter-based randomness: a hash of (seed, stream, key) instead of one
// sequential generator, so a draw does not depend on graph size or order.
std::uint64_t key(std::uint64_t seed, std::uint64_t stream, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  return splitmix64(splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ a) ^ (b << 1)) ^ splitmix64(c + 0x51ed27);
}
double uniform(std::uint64_t k) { return (static_cast<double>(splitmix64(k) >> 11) + 0.5) * 0x1.0p-53; }  // (0,1)
double normal(std::uint64_t k) {
  double u1 = uniform(k), u2 = uniform(k ^ 0xa5a5a5a5a5a5a5a5ULL);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}
// exp(sigma z - sigma^2/2) has mean 1 for z ~ N(0,1).
double mean_one_lognormal(double sigma, double z) { return std::exp(sigma * z - sigma * sigma / 2); }

enum Stream : std::uint64_t { kTask = 1, kStraggle = 2, kMicrobatch = 3, kLink = 4 };

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

}  // namespace

double BaseCost::of(Kind k) const {
  switch (k) {
    case Kind::F: return f;
    case Kind::B: return b;
    case Kind::W: return w;
    case Kind::BW: return bw >= 0 ? bw : b + w;
  }
  return 0;
}

BaseCost parse_cost(const std::string& spec) {
  BaseCost c;
  if (spec.empty()) return c;
  std::vector<std::string> seen;  // a kind given twice: which one was meant?
  for (const std::string& item : split(spec, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw SpecError(fmt::format("--cost: '{}' is not KIND=VALUE (e.g. F=1,B=1,W=1)", item));
    std::string k = item.substr(0, eq);
    for (char& ch : k) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (k == "I") k = "B";
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      throw SpecError(fmt::format("--cost {}: {} is given twice", spec, k));
    seen.push_back(k);
    double v = parse_number(item.substr(eq + 1), "--cost " + k);
    if (v < 0) throw SpecError(fmt::format("--cost: {} = {} is negative", k, v));
    if (k == "F") c.f = v;
    else if (k == "B") c.b = v, c.split_given = true;
    else if (k == "W") c.w = v, c.split_given = true;
    else if (k == "BW") c.bw = v;
    else throw SpecError(fmt::format("--cost: unknown kind '{}' (F, B, W or BW)", k));
  }
  if (c.f + c.b + c.w + std::max(c.bw, 0.0) == 0) throw SpecError(fmt::format("--cost {}: every pass costs 0", spec));
  return c;
}

double parse_number(const std::string& s, const std::string& what) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || !std::isfinite(v))
    throw SpecError(fmt::format("{}: '{}' is not a number", what, s));
  return v;
}

Variability parse_variability(const std::string& spec) {
  Variability v;
  v.spec = spec.empty() ? "none" : spec;
  auto parts = split(v.spec, ':');
  const std::string& model = parts[0];
  auto need = [&](size_t n, const char* form) {
    if (parts.size() != n) throw SpecError(fmt::format("--variability '{}': expected {}", spec, form));
  };
  if (model == "none") {
    need(1, "none");
  } else if (model == "lognormal" || model == "multimodal") {
    need(2, model == "lognormal" ? "lognormal:SIGMA" : "multimodal:SIGMA");
    v.type = model == "lognormal" ? Variability::Type::LogNormal : Variability::Type::Multimodal;
    v.sigma = parse_number(parts[1], "--variability sigma");
    if (v.sigma < 0 || v.sigma > 5) throw SpecError(fmt::format("--variability: sigma {} must be in [0, 5]", v.sigma));
  } else if (model == "straggler") {
    need(4, "straggler:STAGE:FACTOR:PROB");
    v.type = Variability::Type::Straggler;
    double st = parse_number(parts[1], "--variability straggler stage");
    if (st < 0 || st != std::floor(st)) throw SpecError(fmt::format("--variability: stage '{}' must be a non-negative integer", parts[1]));
    v.stage = static_cast<int>(st);
    v.factor = parse_number(parts[2], "--variability straggler factor");
    v.prob = parse_number(parts[3], "--variability straggler probability");
    if (v.factor <= 0) throw SpecError(fmt::format("--variability: straggler factor {} must be positive", v.factor));
    if (v.prob < 0 || v.prob > 1) throw SpecError(fmt::format("--variability: probability {} must be in [0, 1]", v.prob));
  } else {
    throw SpecError(fmt::format(
        "--variability: unknown model '{}' (none, lognormal:SIGMA, straggler:STAGE:FACTOR:PROB, multimodal:SIGMA)", model));
  }
  return v;
}

void check_link_gbps(double gbps, const std::string& what) {
  if (!(gbps == 0 || (gbps * 1e9 / 8 >= kMinLinkBandwidthBps && gbps <= 1e9)))
    throw SpecError(fmt::format("{} {} must be 0 (infinite) or from 1e-06 (1 kbit/s) to 1e+09", what, gbps));
}

void check_link_delay(double link_ms, double jitter, bool jitter_needs_delay) {
  if (!(link_ms >= 0) || !std::isfinite(link_ms)) throw SpecError(fmt::format("--link-ms {} must not be negative", link_ms));
  if (link_ms > kMaxTaskSeconds * 1e3)  // a larger one would overflow a wait or a sum
    throw SpecError(fmt::format("--link-ms {:g} is over an hour: too large", link_ms));
  if (!(jitter >= 0 && jitter < 1))
    throw SpecError(fmt::format("--link-jitter {} must be in [0, 1) (relative to --link-ms)", jitter));
  if (jitter_needs_delay && jitter > 0 && link_ms == 0)
    throw SpecError("--link-jitter is relative to --link-ms: it needs --link-ms > 0");
}

void validate(const CostOptions& o) {
  if (o.durations && o.var.type != Variability::Type::None)
    throw SpecError("--durations replays measured durations: drop --variability (or drop --durations)");
  for (Kind k : {Kind::F, Kind::B, Kind::W, Kind::BW}) {
    if (!(o.base.of(k) >= 0)) throw SpecError(fmt::format("cost of {} must not be negative", kind_name(k)));
    for (size_t s = 0; s < o.stage_base.size(); ++s)
      if (!(o.stage_base[s].of(k) >= 0) || !std::isfinite(o.stage_base[s].of(k)))
        throw SpecError(fmt::format("stage {}: cost of {} must be finite and not negative", s, kind_name(k)));
  }
  if (!o.stage_sigma.empty() && o.stage_sigma.size() != o.stage_base.size())
    throw SpecError("a stage spread needs one stage cost per stage");
  for (double v : o.stage_sigma)
    if (!(v >= 0) || !std::isfinite(v)) throw SpecError(fmt::format("stage spread {} must be finite and >= 0", v));
  if (o.durations && !o.stage_base.empty())
    throw SpecError("--durations replays measured durations: drop --profile (or drop --durations)");
  if (!(o.unit_ms > 0) || !std::isfinite(o.unit_ms)) throw SpecError(fmt::format("--unit-ms {} must be positive", o.unit_ms));
  // A sweep over --link-ms keeps its jitter at a point without delay.
  check_link_delay(o.link_ms, o.link_jitter, false);
}

std::string variability_label(const CostOptions& o) {
  std::string s = o.durations ? "durations:" + o.durations->source : o.var.spec;
  if (!o.stage_sigma.empty()) s += "+profile-spread";  // --profile: each stage's measured spread is drawn too
  return s;
}

Durations draw(const TaskGraph& g, const CostOptions& o) {
  validate(o);
  const Variability& v = o.var;
  if (v.type == Variability::Type::Straggler && v.stage >= g.spec().stages)
    throw SpecError(fmt::format("--variability: straggler stage {} but the pipeline has {} stages", v.stage, g.spec().stages));
  const int n = g.size();
  Durations d;
  d.task_s.resize(n);
  if (o.durations) check_trace_fits(*o.durations, g);
  if (!o.stage_base.empty() && static_cast<int>(o.stage_base.size()) != g.spec().stages)
    throw SpecError(fmt::format("the profile's partition has {} stages, the pipeline {}", o.stage_base.size(),
                                g.spec().stages));
  // --cost F=1,BW=2 on a graph without a fused backward would run B and W
  // at their default cost, not at the BW given (with B= or W= also given,
  // BW is for the fused hints of a comparison).
  if (!o.durations && o.stage_base.empty() && o.base.bw >= 0 && !o.base.split_given &&
      std::none_of(g.tasks().begin(), g.tasks().end(), [](const Task& t) { return t.kind == Kind::BW; }))
    throw SpecError("--cost BW= is the fused backward's cost, and this hint splits every backward into B and W: "
                    "give B= and W= too (or run it fused, --fused)");
  for (int id = 0; id < n; ++id) {
    if (o.durations) {
      d.task_s[id] = trace_duration(*o.durations, g, id, o.seed);
      continue;
    }
    const Task& t = g.task(id);
    const auto k = static_cast<std::uint64_t>(t.kind);
    double factor = 1;
    switch (v.type) {
      case Variability::Type::None: break;
      case Variability::Type::LogNormal:
        factor = mean_one_lognormal(v.sigma, normal(key(o.seed, kTask, k, t.stage, t.mb)));
        break;
      case Variability::Type::Straggler:
        if (t.stage == v.stage && uniform(key(o.seed, kStraggle, k, t.stage, t.mb)) < v.prob) factor = v.factor;
        break;
      case Variability::Type::Multimodal: {
        // One latent z per microbatch: heavy on the encoder stage 0 and,
        // with opposite sign and half the spread, on the others (an
        // image-heavy microbatch is text-light). Both factors have mean 1.
        double z = normal(key(o.seed, kMicrobatch, 0, 0, t.mb));
        factor = t.stage == 0 ? mean_one_lognormal(v.sigma, z) : mean_one_lognormal(v.sigma / 2, -z);
        break;
      }
    }
    if (!o.stage_sigma.empty()) factor *= mean_one_lognormal(o.stage_sigma[t.stage], normal(key(o.seed, kMicrobatch, 1, t.stage, t.mb)));
    const BaseCost& base = o.stage_base.empty() ? o.base : o.stage_base[t.stage];
    d.task_s[id] = base.of(t.kind) * factor * o.unit_ms * 1e-3;
  }
  // The costs this graph's passes take (a split hint ignores BW, a fused
  // one B and W) can all be 0: every makespan would read 0.
  if (n > 0 && std::all_of(d.task_s.begin(), d.task_s.end(), [](double s) { return s == 0; }))
    throw SpecError("every task of this pipeline would take 0 s: the passes it runs all cost 0 (--cost, --profile)");
  d.edge_off.assign(n + 1, 0);
  for (int id = 0; id < n; ++id) d.edge_off[id + 1] = d.edge_off[id] + g.preds(id).size();
  d.edge_s.assign(d.edge_off[n], 0.0);
  for (int id = 0; id < n; ++id) {
    const Task& t = g.task(id);
    int k = 0;
    for (int p : g.preds(id)) {
      const Task& pt = g.task(p);
      if (pt.device != t.device && o.link_ms > 0) {
        double u = uniform(key(o.seed, kLink, static_cast<std::uint64_t>(pt.kind) * 8 + static_cast<std::uint64_t>(t.kind),
                               static_cast<std::uint64_t>(pt.stage) * 65536 + t.stage, t.mb));
        d.edge_s[d.edge_off[id] + k] = o.link_ms * (1 + o.link_jitter * (2 * u - 1)) * 1e-3;
      }
      ++k;
    }
  }
  // A bench task sleeps its duration and a simulated makespan sums them: an
  // overflow (1e308 ms) would turn into inf or a zero-length sleep.
  for (int id = 0; id < n; ++id) {
    if (!(d.task_s[id] <= kMaxTaskSeconds))
      throw SpecError(fmt::format("task {} would take {:g} s, over an hour: the costs (--unit-ms, --cost, "
                                  "--variability, --durations) are too large",
                                  g.label(id), d.task_s[id]));
    for (int k = d.edge_off[id]; k < d.edge_off[id + 1]; ++k)
      if (!(d.edge_s[k] <= kMaxTaskSeconds))
        throw SpecError(fmt::format("a transfer into task {} would take {:g} s, over an hour: --link-ms is too large",
                                    g.label(id), d.edge_s[k]));
  }
  return d;
}

LowerBound lower_bound(const TaskGraph& g, const Durations& d) {
  const int n = g.size(), D = g.spec().devices;
  auto order = g.topological_order();
  // head[t]: earliest start with unlimited devices; tail[t]: longest chain
  // that must still run after t ends (transfers included).
  std::vector<double> head(n, 0), tail(n, 0);
  for (int id : order) {
    int k = 0;
    for (int p : g.preds(id)) head[id] = std::max(head[id], head[p] + d.task_s[p] + d.edge(id, k++));
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int id = *it;
    int k = 0;
    for (int p : g.preds(id)) {
      tail[p] = std::max(tail[p], d.edge(id, k++) + d.task_s[id] + tail[id]);
    }
  }
  LowerBound lb;
  std::vector<double> first(D, 1e300), last(D, 1e300), busy(D, 0);
  for (int id = 0; id < n; ++id) {
    int dev = g.task(id).device;
    first[dev] = std::min(first[dev], head[id]);
    last[dev] = std::min(last[dev], tail[id]);
    busy[dev] += d.task_s[id];
    lb.critical_path = std::max(lb.critical_path, head[id] + d.task_s[id] + tail[id]);
  }
  lb.per_device.assign(D, 0);
  lb.bound = lb.critical_path;
  for (int dev = 0; dev < D; ++dev) {
    if (first[dev] > 1e299) continue;  // device without tasks
    lb.per_device[dev] = first[dev] + busy[dev] + last[dev];
    lb.bound = std::max(lb.bound, lb.per_device[dev]);
  }
  lb.tail = std::move(tail);
  return lb;
}

}  // namespace rrfp
