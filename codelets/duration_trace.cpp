#include "codelets/duration_trace.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "codelets/splitmix.hpp"
#include "plot/timeline.hpp"

namespace rrfp {

namespace {

struct Cell {
  int stage;
  Kind kind;
  int mb;
};

bool parse_int(const std::string& s, size_t& i, int& out) {
  const size_t b = i;
  long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - b < 7) v = v * 10 + (s[i++] - '0');
  out = static_cast<int>(v);
  return i > b;
}

// "2F0", "1I3", "0W1", "0B2" (PyTorch's cell notation, as plot/timeline
// slices are named); false for anything else.
bool parse_cell(const std::string& s, Cell& c) {
  size_t i = 0;
  if (!parse_int(s, i, c.stage) || i >= s.size()) return false;
  switch (s[i++]) {
    case 'F': c.kind = Kind::F; break;
    case 'I': c.kind = Kind::B; break;
    case 'W': c.kind = Kind::W; break;
    case 'B': c.kind = Kind::BW; break;
    default: return false;
  }
  return parse_int(s, i, c.mb) && i == s.size();
}

bool is_optimizer_slice(const std::string& s) {
  return s.size() > 3 && s.compare(0, 3, "opt") == 0 &&
         std::all_of(s.begin() + 3, s.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
}

}  // namespace

DurationTrace read_duration_trace(const std::string& path) {
  const Timeline tl = read_chrome_trace(path);  // throws SpecError on unreadable or malformed files
  DurationTrace t;
  t.source = path;
  t.title = tl.title;
  auto fail = [&](const std::string& why) { return SpecError(fmt::format("--durations {}: {}", path, why)); };
  const std::string prefix = "rrfp train ";
  if (tl.title.compare(0, prefix.size(), prefix) != 0)
    throw fail(fmt::format("not a trace of `rrfp train --trace` (its title is '{}'); bench and sim traces hold "
                           "synthetic durations, not measured ones",
                           tl.title));
  std::istringstream words(tl.title.substr(prefix.size()));
  words >> t.model;
  // The trainer appends each step's slices after the previous step's: the
  // k-th time a cell appears in the file is step k.
  std::map<std::tuple<int, int, int>, std::vector<double>> seen;
  for (const Slice* s = tl.slices.data(); s != tl.slices.data() + tl.slices.size(); ++s) {
    if (is_optimizer_slice(s->name)) continue;
    Cell c{};
    if (!parse_cell(s->name, c))
      throw fail(fmt::format("slice '{}' is neither a pass (like 2F0, 1I3, 0W1, 0B2) nor an optimizer step (opt1)",
                             s->name.substr(0, 40)));
    const double d = s->end_s - s->start_s;
    if (!(d >= 0)) throw fail(fmt::format("slice {} has a negative duration ({} s)", s->name, d));
    seen[{c.stage, static_cast<int>(c.kind), c.mb}].push_back(d);
    t.stages = std::max(t.stages, c.stage + 1);
    t.microbatches = std::max(t.microbatches, c.mb + 1);
    if (c.kind == Kind::BW) t.fused = true;
  }
  if (seen.empty()) throw fail("it has no pass slices (2F0, ...)");
  bool split = false, timed = false;
  std::map<int, int> times;  // recordings per pass -> how many passes
  for (const auto& [k, v] : seen) {
    split = split || std::get<1>(k) == static_cast<int>(Kind::B);
    for (double d : v) timed = timed || d > 0;
    ++times[static_cast<int>(v.size())];
  }
  t.mixed = split && t.fused;
  if (!timed) throw fail("every pass lasts 0 s: there is nothing to replay");
  // The steps: how often most passes are recorded, so that the one pass
  // recorded more or fewer times is the one named below.
  int most = 0;
  for (const auto& [n, passes] : times)
    if (passes >= most) most = passes, t.steps = n;
  // Every stage has a forward of every microbatch: checked before the
  // tables are sized, so a stray "0F999999" cannot allocate gigabytes.
  if (static_cast<double>(t.stages) * t.microbatches > static_cast<double>(seen.size()))
    throw fail(fmt::format("it names stage {} and microbatch {} but records only {} distinct passes: passes are "
                           "missing (a cut or merged file?)",
                           t.stages - 1, t.microbatches - 1, seen.size()));
  t.cell.assign(static_cast<size_t>(t.stages) * kNumKinds * t.microbatches, {});
  t.pooled.assign(static_cast<size_t>(t.stages) * kNumKinds, {});
  // Every pass the trace has for a stage must be there for every
  // microbatch and every step: a hole means a cut or merged file. In a
  // mixed trace a microbatch's backward is fused or split, so only its
  // forward is there for every microbatch; its backward is checked below.
  for (int s = 0; s < t.stages; ++s)
    for (int k = 0; k < kNumKinds; ++k) {
      bool any = false;
      for (int m = 0; m < t.microbatches; ++m) any = any || seen.count({s, k, m});
      if (!any) continue;
      for (int m = 0; m < t.microbatches; ++m) {
        auto it = seen.find({s, k, m});
        if (t.mixed && k != static_cast<int>(Kind::F) && it == seen.end()) continue;
        const int n = it == seen.end() ? 0 : static_cast<int>(it->second.size());
        const std::string label = fmt::format("{}{}{}", s, csv_letter(static_cast<Kind>(k)), m);
        if (n != t.steps) throw fail(fmt::format("pass {} is recorded {} times, the others {} (one per step)", label, n, t.steps));
        t.cell[(static_cast<size_t>(s) * kNumKinds + k) * t.microbatches + m] = it->second;
        auto& pool = t.pooled[static_cast<size_t>(s) * kNumKinds + k];
        pool.insert(pool.end(), it->second.begin(), it->second.end());
      }
    }
  for (int s = 0; s < t.stages; ++s)
    if (t.pool(Kind::F, s).empty()) throw fail(fmt::format("stage {} has no forward recorded", s));
  if (!t.mixed) return t;
  // Each microbatch has one whole backward; each stage that ran some split
  // gets its mean I share (value()).
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  t.input_share.assign(t.stages, -1);
  for (int s = 0; s < t.stages; ++s) {
    for (int m = 0; m < t.microbatches; ++m) {
      const bool b = seen.count({s, static_cast<int>(Kind::B), m}), w = seen.count({s, static_cast<int>(Kind::W), m});
      if (b != w)
        throw fail(fmt::format("microbatch {} of stage {} has {} but no {}", m, s, b ? "an I" : "a W", b ? "W" : "I"));
      if (!b && !seen.count({s, static_cast<int>(Kind::BW), m}))
        throw fail(fmt::format("microbatch {} of stage {} has no backward (neither B nor I and W)", m, s));
    }
    if (!t.pool(Kind::B, s).empty()) {
      const double i = mean(t.pool(Kind::B, s)), w = mean(t.pool(Kind::W, s));
      t.input_share[s] = i + w > 0 ? i / (i + w) : 0.5;  // all zero: split evenly
    }
  }
  return t;
}

double DurationTrace::value(Kind k, int stage, int mb, int step) const {
  const std::vector<double>& own = at(k, stage, mb);
  if (!own.empty() || !mixed || k == Kind::F) return own.at(step);
  if (k == Kind::BW) return at(Kind::B, stage, mb).at(step) + at(Kind::W, stage, mb).at(step);
  // Split from fused: the stage's mean I or W share of I + W.
  const double share = input_share.at(stage);
  if (share < 0) throw SpecError(fmt::format("--durations {}: stage {} never ran a split backward", source, stage));
  return at(Kind::BW, stage, mb).at(step) * (k == Kind::B ? share : 1 - share);
}

void check_trace_fits(const DurationTrace& t, const TaskGraph& g, const std::string& expect_model) {
  auto fail = [&](const std::string& why) { return SpecError(fmt::format("--durations {}: {}", t.source, why)); };
  if (!expect_model.empty() && expect_model != t.model)
    throw fail(fmt::format("it is a trace of model '{}', not '{}'", t.model, expect_model));
  const int S = g.spec().stages;
  if (S < t.stages)
    throw fail(fmt::format("it has {} stages and the pipeline {}: give at least the trace's stages (more resample it)",
                           t.stages, S));
  for (int id = 0; id < g.size(); ++id) {
    const Task& x = g.task(id);
    const int ts = static_cast<int>(static_cast<long long>(x.stage) * t.stages / S);
    // A mixed trace derives one backward form from the other (value()); a
    // split form needs the stage to have run some microbatch split.
    const bool derived = t.mixed && (x.kind == Kind::BW || (x.kind != Kind::F && !t.pool(Kind::B, ts).empty()));
    if (t.pool(x.kind, ts).empty() && !derived)
      throw fail(fmt::format("the graph needs {} passes of stage {} and the trace recorded none ({}): use a "
                             "hint with {}",
                             kind_name(x.kind), ts,
                             t.mixed ? "only fused backwards at that stage" : t.fused ? "fused backward" : "split backward",
                             t.mixed ? "a fused backward (--fused)" : "the trace's backward form"));
  }
}

double trace_duration(const DurationTrace& t, const TaskGraph& g, int task, std::uint64_t seed) {
  const Task& x = g.task(task);
  const int S = g.spec().stages;
  if (S == t.stages && x.mb < t.microbatches) return t.value(x.kind, x.stage, x.mb, static_cast<int>(seed % t.steps));
  // Microbatch mb replays one recorded (step, microbatch), the same for all
  // its stages and passes: a heavy microbatch stays heavy down the pipeline.
  const int ts = static_cast<int>(static_cast<long long>(x.stage) * t.stages / S);
  const std::uint64_t h = splitmix64(splitmix64(seed ^ 0x7472616365ULL) ^ static_cast<std::uint64_t>(x.mb));
  const auto pick = h % (static_cast<std::uint64_t>(t.steps) * t.microbatches);
  return t.value(x.kind, ts, static_cast<int>(pick % t.microbatches), static_cast<int>(pick / t.microbatches));
}

}  // namespace rrfp
