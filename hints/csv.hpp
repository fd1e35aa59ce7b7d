// PyTorch's compute-only schedule CSV (torch.distributed.pipelining): one
// row per rank, one cell per step in the rank's order. Cells: "2F0"
// (forward of stage 2, microbatch 0), "1I3" (input backward), "0W1" (weight
// backward), "0B2" (full backward), empty (an idle slot, skipped), and
// "(0F7;7B3)OVERLAP_F_B" (tasks run as one step, kept as overlap marks).
// Older files write the input backward as "B" followed later by "W" of the
// same stage and microbatch; those B cells are read as input backwards.
#pragma once

#include <string>
#include <vector>

#include "hints/hint.hpp"

namespace rrfp {

// Builds the spec (stages = max stage + 1, microbatches = max mb + 1,
// placement from the rows, split or fused per stage and microbatch) and the
// hint. `source` names the input in messages ("file.csv:3:14: ..."). Throws
// SpecError on malformed input or a missing/duplicated task; the order is
// not checked for executability here (see validate.hpp).
Hint import_csv(const std::string& text, const std::string& source = "<csv>");
Hint import_csv_file(const std::string& path);

// One line per device, cells separated by ',', each line ending in '\n'.
// Throws SpecError for hints with several pipelines (Chimera): a CSV row
// holds stages by index, so two copies of stage s cannot be told apart.
std::string export_csv(const Hint& hint);
// The cells of one device's row, overlap groups folded into one cell.
std::vector<std::string> csv_cells(const Hint& hint, int device);
// Every device's row of cells: the order as resolved (an alias, an implied
// --split or another path to the same CSV give the same rows).
std::vector<std::vector<std::string>> csv_rows(const Hint& hint);

}  // namespace rrfp
