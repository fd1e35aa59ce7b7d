// `rrfp sim compare`: rank hints under three abstractions on one graph size:
// the papers' closed forms, the idealised schedule table (strict order, unit
// costs, no communication) and the communication-aware simulation.
#pragma once

#include <string>
#include <vector>

#include "sim/formulas.hpp"
#include "sim/scenario.hpp"

namespace rrfp {

struct CompareRow {
  std::string hint;
  int model_stages = 0;
  int devices = 0, microbatches = 0;  // the same for every row of a ranking
  std::optional<Formula> formula;
  double table_makespan = 0, table_bubble = 0;     // device-time units
  double sim_fixed_s = 0, sim_rrfp_s = 0;          // seconds
  double peak_activation = 0, weight = 0;          // max over devices, bytes
  int rank_formula = 0, rank_table = 0, rank_sim = 0;  // 1 = best
};

// Every task's cost is scaled by devices/model_stages, so each hint does the
// same work per device whatever its chunking; likewise for activation and
// weight bytes per stage.
// `csv`: the sizes a CSV hint (csv:PATH) is made with, 0 for the file's
// own (the flags the user did not give); null: `p` for every hint.
std::vector<CompareRow> compare_hints(const std::vector<std::string>& hints, const HintParams& p, const Scenario& sc,
                                      double act_bytes_per_device, double weight_bytes_per_device,
                                      const HintParams* csv = nullptr);

std::string format_compare(const std::vector<CompareRow>& rows);

}  // namespace rrfp
