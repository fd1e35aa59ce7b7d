// Lexer for PyTorch's schedule CSV: turns text into rows of actions with
// their line and column, rejecting anything that is not a compute action.
// Kept apart from the hint builder so malformed input is handled in one
// place, with bounded numbers and no assumptions about the bytes.
#pragma once

#include <string>
#include <vector>

namespace rrfp {

struct CsvAction {
  int stage;
  char kind;  // 'F', 'I', 'B' or 'W', as written
  int mb;
  int line;   // 1-based
  int col;    // 1-based byte column where the cell starts
  bool overlap_next;  // runs in one step with the next action of the row
};

// One entry per rank (line); trailing blank lines are dropped. Throws
// SpecError "source:line:col: problem" on the first malformed cell.
std::vector<std::vector<CsvAction>> lex_csv(const std::string& text, const std::string& source);

// The cell text made safe to print: non-printable bytes as \xNN, long
// cells cut.
std::string printable_cell(const std::string& cell);

}  // namespace rrfp
