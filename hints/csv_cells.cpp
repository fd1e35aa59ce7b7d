#include "hints/csv_cells.hpp"

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"

namespace rrfp {

std::string printable_cell(const std::string& cell) {
  std::string out;
  for (size_t i = 0; i < cell.size() && i < 32; ++i) {
    unsigned char c = static_cast<unsigned char>(cell[i]);
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (cell.size() > 32) out += "...";
  return out;
}

namespace {

struct CellError {
  std::string what;
};

// Reads a decimal number at text[pos..]; `limit` is the first value that
// is too large. Accumulates with a bound check so no input can overflow.
int read_number(const std::string& t, size_t& pos, long long limit, const char* what) {
  if (pos < t.size() && t[pos] == '-') throw CellError{fmt::format("negative {}", what)};
  if (pos >= t.size() || t[pos] < '0' || t[pos] > '9') throw CellError{fmt::format("expected a {} number", what)};
  long long v = 0;
  for (; pos < t.size() && t[pos] >= '0' && t[pos] <= '9'; ++pos) {
    v = v * 10 + (t[pos] - '0');
    if (v >= limit) throw CellError{fmt::format("{} number too large (must be below {})", what, limit)};
  }
  return static_cast<int>(v);
}

bool is_comm_or_other(const std::string& word) {
  static const char* const names[] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD"};
  for (const char* n : names)
    if (word == n) return true;
  return false;
}

// One action "2F0". `t` is the whole cell; parses t[b, e).
CsvAction parse_action(const std::string& t, size_t b, size_t e) {
  std::string s = t.substr(b, e - b);
  size_t pos = 0;
  CsvAction a{};
  a.stage = read_number(s, pos, kMaxStages, "stage");
  size_t k = pos;
  while (pos < s.size() && ((s[pos] >= 'A' && s[pos] <= 'Z') || (s[pos] >= 'a' && s[pos] <= 'z') || s[pos] == '_'))
    ++pos;
  std::string word = s.substr(k, pos - k);
  if (word.empty()) throw CellError{"expected a kind letter (F, I, B or W) after the stage"};
  if (word == "F" || word == "I" || word == "B" || word == "W") {
    a.kind = word[0];
  } else if (is_comm_or_other(word)) {
    throw CellError{fmt::format("action '{}' is not a computation; only compute-only schedules can be imported "
                                "(PyTorch: _dump_csv(path, format=\"compute_only\"))",
                                word)};
  } else {
    throw CellError{fmt::format("unknown kind '{}' (expected F, I, B or W)", printable_cell(word))};
  }
  a.mb = read_number(s, pos, kMaxMicrobatches, "microbatch");
  if (pos != s.size()) throw CellError{fmt::format("unexpected '{}' after the microbatch", printable_cell(s.substr(pos)))};
  return a;
}

// One cell: a single action or "(a;b;...)OVERLAP_F_B".
void parse_cell(const std::string& cell, std::vector<CsvAction>& out) {
  if (cell[0] != '(') {
    out.push_back(parse_action(cell, 0, cell.size()));
    return;
  }
  size_t close = cell.find(')');
  if (close == std::string::npos) throw CellError{"'(' without ')'"};
  if (cell.compare(close + 1, std::string::npos, "OVERLAP_F_B") != 0)
    throw CellError{"a parenthesised group must be followed by OVERLAP_F_B"};
  size_t first = out.size();
  for (size_t b = 1;;) {
    size_t e = cell.find(';', b);
    if (e == std::string::npos || e > close) e = close;
    size_t ab = b, ae = e;  // PyTorch strips each sub-action: "(0F1; 1B0)"
    while (ab < ae && cell[ab] == ' ') ++ab;
    while (ae > ab && cell[ae - 1] == ' ') --ae;
    if (ae == ab) throw CellError{"empty action inside the overlap group"};
    out.push_back(parse_action(cell, ab, ae));
    if (e == close) break;
    b = e + 1;
  }
  if (out.size() - first < 2) throw CellError{"an overlap group needs at least two actions"};
  for (size_t i = first; i + 1 < out.size(); ++i) out[i].overlap_next = true;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::vector<std::vector<CsvAction>> lex_csv(const std::string& text, const std::string& source) {
  std::vector<std::vector<CsvAction>> rows;
  size_t last_nonblank_row = 0;
  int line = 0;
  for (size_t ls = 0; ls < text.size();) {
    size_t le = text.find('\n', ls);
    if (le == std::string::npos) le = text.size();
    ++line;
    rows.emplace_back();
    auto& row = rows.back();
    for (size_t cs = ls; cs <= le;) {
      size_t ce = text.find(',', cs);
      if (ce == std::string::npos || ce > le) ce = le;
      size_t b = cs, e = ce;
      while (b < e && is_blank(text[b])) ++b;
      while (e > b && is_blank(text[e - 1])) --e;
      if (b < e) {
        std::string cell = text.substr(b, e - b);
        size_t before = row.size();
        try {
          parse_cell(cell, row);
        } catch (const CellError& err) {
          throw SpecError(fmt::format("{}:{}:{}: bad cell '{}': {}", source, line, b - ls + 1, printable_cell(cell),
                                      err.what));
        }
        for (size_t i = before; i < row.size(); ++i) {
          row[i].line = line;
          row[i].col = static_cast<int>(b - ls + 1);
        }
      }
      cs = ce + 1;
    }
    if (!row.empty()) last_nonblank_row = rows.size();
    ls = le + 1;
  }
  rows.resize(last_nonblank_row);
  if (rows.empty()) throw SpecError(fmt::format("{}: no tasks: the file is empty", source));
  return rows;
}

}  // namespace rrfp
