// The hint validator: structure (every task exactly once, on its stage's
// device; per stage F(m) before B(m) before W(m) in the device order) and
// executability (the order run strictly with unit costs must finish).
#pragma once

#include <string>
#include <vector>

#include "hints/hint.hpp"
#include "hints/replay.hpp"

namespace rrfp {

struct ValidationReport {
  int ranks = 0, stages = 0, microbatches = 0;
  std::string placement_name;
  std::vector<int> placement;  // device of each stage (pipeline 0)
  std::string backward;        // "split", "fused" or "mixed"
  ReplayResult replay;         // unit costs, strict order; complete
};

// "split", "fused" or "mixed" for a spec.
std::string backward_form(const PipelineSpec& spec);

// Throws SpecError naming the first structural problem, or, for an order
// that deadlocks, every stuck device, its task and what it waits for,
// followed by the timeline grid up to the deadlock.
ValidationReport validate_hint(const Hint& hint);

}  // namespace rrfp
