// Closed-form bubble ratios and activation memory of the schedule zoo, as the
// papers state them, for the first of the three abstractions `rrfp sim
// compare` puts side by side (formula, idealised table, simulation).
#pragma once

#include <optional>
#include <string>

#include "hints/generators.hpp"

namespace rrfp {

struct Formula {
  double bubble_ratio;    // idle share of the makespan
  double activation;      // peak activations, in units of one device's
                          // activations for one microbatch (1F1B: p)
  double weight_copies;   // weight memory relative to one copy
  std::string source;     // the expression, for the table
};

// std::nullopt for hints without a closed form (imported CSV files).
std::optional<Formula> formula_for(const std::string& hint, const HintParams& p);

}  // namespace rrfp
