#include "sim/tuner.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "hints/csv.hpp"
#include "hints/gen_greedy.hpp"
#include "hints/generators.hpp"
#include "sched/memory_budget.hpp"

namespace rrfp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Layout {
  std::string name;  // linear | interleaved:V | vshape | bidirectional | bidirectional-asym
  int chunks = 1;
  bool vshape = false;
  // Chimera: two pipelines in opposite directions over the same devices,
  // each device holding stage d and stage D-1-d (a copy of each stage per
  // direction). Zoo schedule only: the greedy generator builds one pipeline.
  bool bidirectional = false;
  // The asymmetric variant (chimera-asym): 2D-1 stages, the two directions
  // cutting them into device groups at interleaved points.
  bool asymmetric = false;
  int stages(int D) const { return asymmetric ? 2 * D - 1 : D * chunks; }
};

PipelineSpec layout_spec(const Layout& l, int D, int M, bool split) {
  if (l.vshape) return PipelineSpec::vshape(D, M, split);
  if (l.chunks > 1) return PipelineSpec::interleaved(D, l.chunks, M, split);
  return PipelineSpec::linear(D, M, split);
}

// `what`: where the name came from, for the error ("--placements", a plan's 'placement').
Layout parse_layout(const std::string& s, const std::string& what = "--placements") {
  if (s == "linear") return {s, 1, false};
  if (s == "vshape") return {s, 2, true};
  if (s == "bidirectional") return {s, 1, false, true};
  if (s == "bidirectional-asym") return {s, 1, false, true, true};
  if (s.rfind("interleaved:", 0) == 0) {
    const double v = parse_number(s.substr(12), what + " interleaved:V");
    if (v < 2 || v > 64 || v != static_cast<int>(v))
      throw SpecError(fmt::format("{}: '{}' needs an integer V in [2, 64]", what, s));
    return {s, static_cast<int>(v), false};
  }
  throw SpecError(fmt::format("{}: unknown placement '{}' (known: linear, interleaved:V, vshape, bidirectional, "
                              "bidirectional-asym)",
                              what, s));
}

// The zoo hint a layout's greedy caps follow (its in-flight peaks).
std::string reference_hint(const Layout& l) {
  if (l.bidirectional) return l.asymmetric ? "chimera-asym" : "chimera";
  return l.vshape ? "zbv" : l.chunks > 1 ? "interleaved-1f1b" : "1f1b";
}

// The zoo's hints for a layout; "greedy" and "greedy-wide" are generated per
// partition (one pipeline: a bidirectional layout has its zoo hint only).
std::vector<std::string> layout_schedules(const Layout& l) {
  if (l.bidirectional) return {reference_hint(l)};
  if (l.vshape) return {"zbv", "greedy", "greedy-wide"};
  if (l.chunks > 1) return {"interleaved-1f1b", "greedy", "greedy-wide"};
  return {"gpipe", "1f1b", "zb-h1", "zb-h2", "greedy", "greedy-wide"};
}

struct Candidate {
  Layout layout;
  std::string schedule;
  std::shared_ptr<const Hint> zoo;  // null for the greedy schedules
  std::vector<int> ref_cap;         // per device, the reference hint's peak in-flight
};

struct Trial {
  bool complete = false, fits = false;
  std::string why;
  double step = kInf, mem_max = kInf;
  std::vector<double> mem;
  int busiest = 0;
  std::shared_ptr<const Hint> hint;
  std::vector<int> counts;
};

// a better than b: fitting first, then the shorter step; among plans that do
// not fit, the smaller memory (the loop walks towards the limit).
bool better(const Trial& a, const Trial& b) {
  if (a.complete != b.complete) return a.complete;
  if (a.fits != b.fits) return a.fits;
  if (!a.fits) return a.mem_max < b.mem_max * (1 - 1e-9);
  return a.step < b.step * (1 - 1e-6);
}

// Between plans: better(), and on a predicted tie the one that holds less.
// The simulator does not slow a pass down for the memory it keeps live, a
// real machine does: on one device GPipe and 1F1B tie in simulation, and
// GPipe's 4 microbatches of activations made it 1.11-1.16x slower
// (perf/RESULTS.md).
bool preferred(const Trial& a, const Trial& b) {
  if (better(a, b)) return true;
  if (better(b, a)) return false;
  return a.fits && a.mem_max < b.mem_max * (1 - 1e-9);
}

struct Search {
  const ModelProfile& prof;
  const TuneOptions& o;

  std::shared_ptr<const Hint> greedy(const Candidate& cand, const StageCosts& c) const {
    auto h = std::make_shared<Hint>();
    h->graph = std::make_shared<TaskGraph>(layout_spec(cand.layout, o.devices, o.microbatches, true));
    const TaskGraph& g = *h->graph;
    GreedyOptions go;
    go.cap = cand.ref_cap;
    if (cand.schedule == "greedy-wide") {
      // As many forwards in flight as the memory limit allows (twice the
      // reference's without a limit).
      for (int d = 0; d < o.devices; ++d) {
        double act = 0, w = 0;
        for (int s : g.spec().stages_on(d)) act = std::max(act, c.activation_bytes[s]), w += c.weight_bytes[s];
        int cap = 2 * cand.ref_cap[d];
        if (o.memory_bytes > 0 && act > 0)
          cap = static_cast<int>(std::min(1e6, std::floor((o.memory_bytes - kStateCopies * w) / act)));
        go.cap[d] = std::clamp(cap, 1, g.spec().stages * o.microbatches);
      }
    }
    go.duration = [&g, &c](int id) { return c.cost[g.task(id).stage].of(g.task(id).kind) * 1e-3; };
    const Objective& ob = o.objective;
    go.link_s = ob.latency_s + ob.link_ms * 1e-3 + (ob.bandwidth_Bps > 0 ? c.message_bytes / ob.bandwidth_Bps : 0);
    greedy_schedule(*h, go);
    return h;
  }

  Trial evaluate(const Candidate& cand, const std::vector<int>& counts) const {
    Trial t;
    t.counts = counts;
    const StageCosts c = stage_costs(prof, counts);
    try {
      t.hint = cand.zoo ? cand.zoo : greedy(cand, c);
    } catch (const SpecError& e) {
      t.why = e.what();
      return t;
    }
    const StepEstimate e = estimate_step(*t.hint, c, o.objective);
    if (!e.complete) {
      t.why = e.stuck;
      return t;
    }
    t.complete = true;
    t.step = e.step_s;
    t.mem = e.memory;
    for (int d = 0; d < o.devices; ++d)
      if (e.busy_s[d] > e.busy_s[t.busiest]) t.busiest = d;
    t.mem_max = *std::max_element(t.mem.begin(), t.mem.end());
    t.fits = o.memory_bytes <= 0 || t.mem_max <= o.memory_bytes;
    return t;
  }

  // One block from stage `from` to its neighbour `to` (= from +- 1).
  static std::vector<int> moved(std::vector<int> counts, int from, int to) {
    --counts[from];
    ++counts[to];
    return counts;
  }
  bool valid(const std::vector<int>& counts) const {
    try {
      check_counts(counts, prof.blocks());
      return true;
    } catch (const SpecError&) {
      return false;
    }
  }

  void say(const std::string& line) const {
    if (o.log) o.log(line);
  }

  Trial improve(const Candidate& cand, Trial cur, nlohmann::json& tried) const {
    const int S = static_cast<int>(cur.counts.size());
    const std::string label = fmt::format("{} {}", cand.layout.name, cand.schedule);
    for (int it = 0; it < o.max_moves; ++it) {
      // Moves off the busiest device's heaviest stage first, then all others.
      const TaskGraph& g = *cur.hint->graph;
      const StageCosts c = stage_costs(prof, cur.counts);
      int heavy = -1;
      for (int s : g.spec().stages_on(cur.busiest))
        if (heavy < 0 || c.cost[s].f + c.cost[s].b + c.cost[s].w > c.cost[heavy].f + c.cost[heavy].b + c.cost[heavy].w)
          heavy = s;
      std::vector<std::pair<int, int>> first, rest;
      for (int s = 0; s < S; ++s)
        for (int to : {s - 1, s + 1})
          if (to >= 0 && to < S && valid(moved(cur.counts, s, to))) (s == heavy ? first : rest).push_back({s, to});
      Trial best = cur;
      std::pair<int, int> how{-1, -1};
      const char* why = "";
      for (const auto* moves : {&first, &rest}) {
        for (auto [s, to] : *moves) {
          Trial t = evaluate(cand, moved(cur.counts, s, to));
          if (better(t, best)) best = std::move(t), how = {s, to};
        }
        if (how.first >= 0) {
          why = moves == &first ? "off the busiest device's heaviest stage" : "elsewhere";
          break;
        }
      }
      if (how.first < 0) {
        say(fmt::format("  {}: stop after {} moves: no single-block move shortens the step ({:.3f} ms)", label, it,
                        cur.step * 1e3));
        break;
      }
      say(fmt::format("  {}: block from stage {} to {} ({}): {:.3f} -> {:.3f} ms, partition {}", label, how.first,
                      how.second, why, cur.step * 1e3, best.step * 1e3, fmt::join(best.counts, ",")));
      cur = std::move(best);
    }
    tried.push_back({{"placement", cand.layout.name},
                     {"schedule", cand.schedule},
                     {"partition", cur.counts},
                     {"predicted_step_s", cur.complete ? cur.step : -1.0},
                     {"memory_max_bytes", cur.complete ? cur.mem_max : -1.0},
                     {"fits", cur.fits},
                     {"note", cur.why}});
    return cur;
  }
};

}  // namespace

void check_placement(const std::string& placement, const std::string& what) { (void)parse_layout(placement, what); }

StepEstimate estimate_even(const ModelProfile& p, const Hint& h, const Objective& o) {
  return estimate_step(h, stage_costs(p, even_counts(p.model, p.blocks(), h.spec().stages)), o);
}

std::vector<int> balanced_counts(const ModelProfile& p, int S) {
  const int L = p.blocks();
  if (S < 1 || S > L + 2 || (S > 2 && S - 2 > L))
    throw SpecError(fmt::format("{} stages cannot split {} blocks (at most {} stages)", S, L, L + 2));
  auto work = [&](int i) { return p.layers[i].f.mean_s + p.layers[i].b.mean_s + p.layers[i].w.mean_s; };
  std::vector<double> pre(L + 1, 0);  // blocks are layers 1..L
  for (int i = 0; i < L; ++i) pre[i + 1] = pre[i] + work(i + 1);
  const double head = work(L + 1), first = work(0);
  if (S == 1) return {L};
  // best[s][k]: smallest largest-stage cost with stages 0..s-1 holding blocks [0, k).
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> from(S + 1, std::vector<int>(L + 1, -1));
  for (int k = 0; k <= L; ++k) best[1][k] = first + pre[k], from[1][k] = 0;
  for (int s = 2; s <= S; ++s)
    for (int k = 0; k <= L; ++k)
      for (int j = 0; j <= k; ++j) {
        const bool last = s == S;
        if (k - j == 0 && !last) continue;  // a middle stage needs a block
        if (last && k != L) continue;
        const double stage = pre[k] - pre[j] + (last ? head : 0);
        const double v = std::max(best[s - 1][j], stage);
        if (v < best[s][k]) best[s][k] = v, from[s][k] = j;
      }
  std::vector<int> counts(S);
  for (int s = S, k = L; s >= 1; --s) {
    const int j = from[s][k];
    counts[s - 1] = k - j;
    k = j;
  }
  return counts;
}

std::vector<int> asymmetric_start(const ModelProfile& p, int D) {
  // Chimera's balanced D-stage cuts for the down direction, each up cut one
  // block later: the odd stages start with one block each. Where a stage
  // has no block to give, the plain balanced split of 2D-1 stages.
  const std::vector<int> sym = balanced_counts(p, D);
  std::vector<int> counts;
  for (int k = 0; k < D; ++k) {
    const int n = sym[k] - (k > 0 ? 1 : 0);
    if (n < (k > 0 && k < D - 1 ? 1 : 0)) return balanced_counts(p, 2 * D - 1);
    counts.push_back(n);
    if (k < D - 1) counts.push_back(1);
  }
  return counts;
}

void check_tune_options(const TuneOptions& o) {
  if (o.devices < 1) throw SpecError("--devices must be at least 1");
  if (o.microbatches < 1) throw SpecError("--microbatches must be at least 1");
  if (!(o.memory_bytes >= 0)) throw SpecError("--memory-mb must not be negative");
  if (o.memory_bytes > kMaxPlanQuantity)  // a plan file could not hold it
    throw SpecError(fmt::format("--memory-mb {:.0f} is more than a plan holds ({:.0f} MiB)", o.memory_bytes / 1048576,
                                kMaxPlanQuantity / 1048576));
  // The bounds a plan file is read back with (sim/plan.cpp).
  if (o.objective.seeds < 1 || o.objective.seeds > kMaxPlanSeeds)
    throw SpecError(fmt::format("--seeds must be from 1 to {}", kMaxPlanSeeds));
  if (o.objective.inflight_slack < 0 || o.objective.inflight_slack > kMaxPlanSlack)
    throw SpecError(fmt::format("--inflight-slack must be from 0 to {}", kMaxPlanSlack));
  if (o.max_moves < 0) throw SpecError("--max-moves must not be negative");
  // Every schedule some placement offers (layout_schedules), so a typo is
  // named instead of silently searching nothing.
  std::vector<std::string> known;
  for (const char* placement : {"linear", "interleaved:2", "vshape", "bidirectional", "bidirectional-asym"})
    for (const std::string& sc : layout_schedules(parse_layout(placement)))
      if (std::find(known.begin(), known.end(), sc) == known.end()) known.push_back(sc);
  for (const std::string& sc : o.schedules)
    if (std::find(known.begin(), known.end(), sc) == known.end())
      throw SpecError(fmt::format("--schedules: unknown schedule '{}' (known: {})", sc, fmt::join(known, ", ")));
  for (const std::string& placement : o.placements) (void)parse_layout(placement);
}

Plan tune_pipeline(const ModelProfile& prof, const TuneOptions& options) {
  TuneOptions o = options;
  o.objective.memory_bytes = o.memory_bytes;  // enforced in simulation as `rrfp train --plan` enforces it
  check_tune_options(o);
  std::vector<Layout> layouts;
  if (o.placements.empty()) {
    layouts.push_back(parse_layout("linear"));
    if (o.devices > 1) layouts.push_back(parse_layout("interleaved:2")), layouts.push_back(parse_layout("vshape"));
    if (o.devices > 1 && o.devices % 2 == 0)
      layouts.push_back(parse_layout("bidirectional")), layouts.push_back(parse_layout("bidirectional-asym"));
  } else {
    for (const std::string& s : o.placements) layouts.push_back(parse_layout(s));
  }
  Search search{prof, o};
  nlohmann::json tried = nlohmann::json::array();
  Trial best;
  Candidate best_cand;
  std::string smallest;  // why nothing fitted: the plan that came closest
  double smallest_bytes = kInf;
  // With --schedules: whether any of them runs on a placement searched,
  // and what those placements run instead.
  bool paired = false;
  std::vector<std::string> offered;
  auto wanted = [&](const std::string& sched) {
    return o.schedules.empty() || std::find(o.schedules.begin(), o.schedules.end(), sched) != o.schedules.end();
  };
  std::vector<std::string> skips;  // why each pair was not searched: the error if none was
  auto skip = [&](const std::string& why) {
    search.say(why);
    skips.push_back(why);
  };
  for (const Layout& l : layouts) {
    for (const std::string& sched : layout_schedules(l))  // before any skip: the skip says why by itself
      if (wanted(sched)) paired = true;
      else offered.push_back(l.name + " " + sched);
    const int S = l.stages(o.devices);
    if (S > prof.blocks() + 2) {
      skip(fmt::format("{}: skipped, {} stages but only {} blocks", l.name, S, prof.blocks()));
      continue;
    }
    HintParams hp;
    hp.stages = o.devices;
    hp.microbatches = o.microbatches;
    hp.chunks = l.chunks > 1 && !l.vshape ? l.chunks : 0;
    std::vector<int> ref_cap;
    try {
      ref_cap = make_hint(reference_hint(l), hp).peak_inflight();
    } catch (const SpecError& e) {
      skip(fmt::format("{}: skipped ({})", l.name, e.what()));
      continue;
    }
    for (const std::string& sched : layout_schedules(l)) {
      if (!wanted(sched)) continue;
      Candidate cand{l, sched, nullptr, ref_cap};
      if (sched.rfind("greedy", 0) != 0) {
        try {
          cand.zoo = std::make_shared<const Hint>(make_hint(sched, hp));
        } catch (const SpecError& e) {
          skip(fmt::format("{} {}: skipped ({})", l.name, sched, e.what()));
          continue;
        }
      }
      Trial start = search.evaluate(cand, l.asymmetric ? asymmetric_start(prof, o.devices) : balanced_counts(prof, S));
      if (!start.hint) {
        skip(fmt::format("{} {}: skipped ({})", l.name, sched, start.why));
        continue;
      }
      search.say(fmt::format("{} {}: balanced partition {}: {:.3f} ms, {:.1f} MiB on the fullest device", l.name,
                             sched, fmt::join(start.counts, ","), start.step * 1e3, start.mem_max / 1048576));
      Trial end = search.improve(cand, std::move(start), tried);
      if (!end.fits && end.complete && end.mem_max < smallest_bytes) {
        smallest_bytes = end.mem_max;
        smallest = fmt::format("{} {} needs {:.1f} MiB", l.name, sched, end.mem_max / 1048576);
      }
      if (!best.hint || preferred(end, best)) best = end, best_cand = cand;
    }
  }
  if (!paired && !o.schedules.empty() && !offered.empty())
    throw SpecError(fmt::format("--schedules {}: none of them runs on the placements searched (these do: {})",
                                fmt::join(o.schedules, ","), fmt::join(offered, ", ")));
  if (!best.hint || !best.complete)
    throw SpecError(fmt::format("no placement and schedule fits {} devices and {} blocks{}", o.devices, prof.blocks(),
                                skips.empty() ? "" : fmt::format(" ({})", fmt::join(skips, "; "))));
  if (!best.fits)
    throw SpecError(fmt::format("no plan fits {} per device (the smallest: {})", mib_text(o.memory_bytes),
                                smallest));
  Plan p;
  p.model = prof.model;
  p.config = prof.config;
  p.micro_batch_size = prof.micro_batch_size;
  p.profile = prof.source;
  p.tensor_parallel = prof.tensor_parallel;
  p.devices = o.devices;
  p.microbatches = o.microbatches;
  p.counts = best.counts;
  p.placement = best_cand.layout.name;
  const PipelineSpec& sp = best.hint->spec();
  for (int s = 0; s < sp.stages; ++s) p.stage_device.push_back(sp.placement[0][s]);
  p.schedule = best_cand.schedule;
  p.policy = mode_policy_name(o.objective.mode);
  p.inflight_slack = o.objective.inflight_slack;
  // PyTorch's CSV names a stage by one rank: a bidirectional plan names its zoo hint instead.
  if (sp.pipelines() == 1) p.csv = export_csv(*best.hint);
  p.predicted_step_s = best.step;
  p.memory_limit_bytes = o.memory_bytes;
  p.memory_bytes = best.mem;
  p.costs = stage_costs(prof, best.counts);
  p.latency_s = o.objective.latency_s;
  p.bandwidth_Bps = o.objective.bandwidth_Bps;
  p.link_ms = o.objective.link_ms;
  p.mirror_after_graph = o.objective.mirror_after_graph;
  p.seeds = o.objective.seeds;
  p.tried = tried;
  return p;
}

}  // namespace rrfp
