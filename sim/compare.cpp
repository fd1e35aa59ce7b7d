#include "sim/compare.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "hints/replay.hpp"

namespace rrfp {

namespace {
// 1-based ranks of `v` (smaller is better; ties share a rank).
std::vector<int> ranks(const std::vector<double>& v) {
  std::vector<int> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    r[i] = 1;
    for (size_t j = 0; j < v.size(); ++j)
      if (v[j] < v[i] - 1e-9 * std::max(1.0, std::abs(v[i]))) ++r[i];
  }
  return r;
}
}  // namespace

std::vector<CompareRow> compare_hints(const std::vector<std::string>& hints, const HintParams& p, const Scenario& sc,
                                      double act_bytes_per_device, double weight_bytes_per_device,
                                      const HintParams* csv) {
  std::vector<CompareRow> rows;
  for (const std::string& name : hints) {
    HintParams hp = csv && is_csv_hint(name) ? *csv : p;
    if (name == "interleaved-1f1b" && hp.chunks == 0) hp.chunks = 2;
    if (name != "interleaved-1f1b") hp.chunks = 0;
    if (name != "hanayo") hp.waves = 0;  // --waves is hanayo's alone
    Hint h = make_hint(name, hp);
    // A ranking compares hints of one size: a CSV of its own size would
    // be ranked against the zoo's at --stages and --microbatches.
    if (!rows.empty() && (h.devices() != rows.front().devices || h.spec().microbatches != rows.front().microbatches))
      throw SpecError(fmt::format("sim compare ranks hints of one size: '{}' runs {} devices x {} microbatches, '{}' "
                                  "{} x {}; give --stages and --microbatches (a CSV's own size must match them)",
                                  rows.front().hint, rows.front().devices, rows.front().microbatches, name,
                                  h.devices(), h.spec().microbatches));
    CompareRow row;
    row.hint = name;
    row.devices = h.devices();
    row.microbatches = h.spec().microbatches;
    row.model_stages = h.spec().stages;
    row.formula = formula_for(name, hp);
    const double scale = double(h.spec().devices) / h.spec().stages;
    ReplayResult t = replay_strict(h, [&](int id) { return unit_cost(h.graph->task(id).kind) * scale; });
    if (!t.complete) throw SpecError(fmt::format("hint '{}' does not run in strict order:\n{}", name, t.stuck));
    row.table_makespan = t.makespan;
    row.table_bubble = t.bubble_ratio;
    Scenario s = sc;
    s.cost.unit_ms *= scale;
    s.memory.activation_bytes.assign(h.spec().stages, act_bytes_per_device * scale);
    s.memory.weight_bytes.assign(h.spec().stages, weight_bytes_per_device * scale);
    s.mode = Mode::Strict;
    ScenarioResult fixed = run_scenario(h, s);
    s.mode = Mode::ReadinessFirst;
    ScenarioResult rf = run_scenario(h, s);
    if (!fixed.sim.complete || !rf.sim.complete)
      throw SpecError(fmt::format("hint '{}' stalled in simulation:\n{}{}", name, fixed.sim.stuck, rf.sim.stuck));
    row.sim_fixed_s = fixed.sim.makespan;
    row.sim_rrfp_s = rf.sim.makespan;
    row.peak_activation = *std::max_element(fixed.sim.peak_activation_bytes.begin(), fixed.sim.peak_activation_bytes.end());
    row.weight = *std::max_element(fixed.sim.weight_bytes.begin(), fixed.sim.weight_bytes.end());
    rows.push_back(std::move(row));
  }
  std::vector<double> fb, tm, sm;
  for (const CompareRow& r : rows) {
    fb.push_back(r.formula ? r.formula->bubble_ratio : 1e300);
    tm.push_back(r.table_makespan);
    sm.push_back(r.sim_fixed_s);
  }
  auto rf = ranks(fb), rt = ranks(tm), rs = ranks(sm);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].rank_formula = rows[i].formula ? rf[i] : 0;
    rows[i].rank_table = rt[i];
    rows[i].rank_sim = rs[i];
  }
  return rows;
}

std::string format_compare(const std::vector<CompareRow>& rows) {
  std::string s = fmt::format("{:<17} {:>6} | {:>8} {:>6} {:>5} | {:>8} {:>7} | {:>9} {:>9} {:>9} | {:>7} {:>7} | {}\n",
                              "hint", "stages", "formula", "act", "w", "table", "bubble", "sim-fixed", "sim-rrfp",
                              "fixed/rf", "act MB", "w MB", "rank formula/table/sim");
  for (const CompareRow& r : rows) {
    std::string fbub = r.formula ? fmt::format("{:.4f}", r.formula->bubble_ratio) : "-";
    std::string fact = r.formula ? fmt::format("{:g}", r.formula->activation) : "-";
    std::string fw = r.formula ? fmt::format("{:g}x", r.formula->weight_copies) : "-";
    s += fmt::format("{:<17} {:>6} | {:>8} {:>6} {:>5} | {:>8.2f} {:>7.4f} | {:>8.3f}ms {:>7.3f}ms {:>9.3f} | {:>7.1f} {:>7.1f} | {}/{}/{}\n",
                     r.hint, r.model_stages, fbub, fact, fw, r.table_makespan, r.table_bubble, r.sim_fixed_s * 1e3,
                     r.sim_rrfp_s * 1e3, r.sim_fixed_s / r.sim_rrfp_s, r.peak_activation / 1e6, r.weight / 1e6,
                     r.rank_formula ? std::to_string(r.rank_formula) : "-", r.rank_table, r.rank_sim);
  }
  return s;
}

}  // namespace rrfp
