#include "hints/csv.hpp"

#include <fstream>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "hints/csv_cells.hpp"
#include "graph/input_file.hpp"

namespace rrfp {

namespace {

// What the file says about one (stage, microbatch).
struct Entry {
  const CsvAction* f = nullptr;
  const CsvAction* i = nullptr;  // 'I'
  const CsvAction* b = nullptr;  // 'B': full backward, or old-style input backward
  const CsvAction* w = nullptr;
};

std::string where(const std::string& src, const CsvAction& a) { return fmt::format("{}:{}:{}", src, a.line, a.col); }

std::string cell_name(const CsvAction& a) { return fmt::format("{}{}{}", a.stage, a.kind, a.mb); }

// Names the placement the rows describe, for reports.
std::string placement_kind(const std::vector<int>& sd, int D) {
  const int S = static_cast<int>(sd.size());
  bool linear = S == D, inter = S > D && S % D == 0, vshape = S == 2 * D;
  for (int s = 0; s < S; ++s) {
    linear = linear && sd[s] == s;
    inter = inter && sd[s] == s % D;
    vshape = vshape && sd[s] == (s < D ? s : 2 * D - 1 - s);
  }
  return linear ? "linear" : inter ? "interleaved" : vshape ? "vshape" : "explicit";
}

}  // namespace

Hint import_csv(const std::string& text, const std::string& source) {
  const auto rows = lex_csv(text, source);
  const int D = static_cast<int>(rows.size());
  if (D > kMaxStages) throw SpecError(fmt::format("{}: {} ranks, more than the {} allowed", source, D, kMaxStages));

  // Index every action by (stage, mb); reject duplicates and stages on two rows.
  std::unordered_map<long long, Entry> by_task;
  std::unordered_map<int, const CsvAction*> stage_first;  // first action of each stage
  std::unordered_map<int, int> stage_row;
  int S = 0, M = 0;
  size_t actions = 0;
  for (int r = 0; r < D; ++r) {
    if (rows[r].empty()) throw SpecError(fmt::format("{}:{}: rank {} has no tasks", source, r + 1, r));
    for (const CsvAction& a : rows[r]) {
      ++actions;
      S = std::max(S, a.stage + 1);
      M = std::max(M, a.mb + 1);
      auto [it, fresh] = stage_row.emplace(a.stage, r);
      if (fresh) stage_first[a.stage] = &a;
      if (it->second != r)
        throw SpecError(fmt::format("{}: stage {} appears on two rows: rank {} ({}) and rank {} ({})", where(source, a),
                                    a.stage, it->second, cell_name(*stage_first[a.stage]), r, cell_name(a)));
      Entry& e = by_task[static_cast<long long>(a.stage) * kMaxMicrobatches + a.mb];
      const CsvAction*& slot = a.kind == 'F' ? e.f : a.kind == 'I' ? e.i : a.kind == 'B' ? e.b : e.w;
      if (slot)
        throw SpecError(fmt::format("{}: duplicate task {} (first at line {}, column {})", where(source, a),
                                    cell_name(a), slot->line, slot->col));
      slot = &a;
      if (e.i && e.b)
        throw SpecError(fmt::format("{}: stage {} microbatch {} has both an input backward {}I{} and a full "
                                    "backward {}B{}",
                                    where(source, a), a.stage, a.mb, a.stage, a.mb, a.stage, a.mb));
    }
  }

  // Every (stage, mb) needs F and a backward. A file with fewer actions than
  // 2*S*M misses one, and the scan below finds it within `actions` steps, so
  // a tiny file naming a huge stage or microbatch never allocates much.
  std::vector<unsigned char> split;
  const bool small_enough = 2LL * S * M <= static_cast<long long>(actions);
  if (small_enough) split.assign(static_cast<size_t>(S) * M, 0);
  for (int s = 0; s < S; ++s) {
    auto row = stage_row.find(s);
    if (row == stage_row.end()) throw SpecError(fmt::format("{}: stage {} appears on no row (stages go up to {})",
                                                            source, s, S - 1));
    for (int m = 0; m < M; ++m) {
      auto it = by_task.find(static_cast<long long>(s) * kMaxMicrobatches + m);
      const Entry* e = it == by_task.end() ? nullptr : &it->second;
      auto missing = [&](const std::string& what) {
        return SpecError(fmt::format("{}: stage {} microbatch {} has no {} on rank {} (stages 0..{}, microbatches "
                                     "0..{})",
                                     source, s, m, what, row->second, S - 1, M - 1));
      };
      if (!e || !e->f) throw missing(fmt::format("forward {}F{}", s, m));
      if (!e->i && !e->b) throw missing(fmt::format("backward ({}B{}, or {}I{} and {}W{})", s, m, s, m, s, m));
      if (e->i && !e->w) throw missing(fmt::format("weight backward {}W{} after {}I{}", s, m, s, m));
      // A W makes the backward split: 'I', or old-style 'B' followed by 'W'.
      if (small_enough) split[static_cast<size_t>(s) * M + m] = e->w != nullptr;
    }
  }

  if (!small_enough) throw SpecError(fmt::format("{}: too few cells for {} stages x {} microbatches", source, S, M));
  std::vector<int> stage_device(S);
  for (int s = 0; s < S; ++s) stage_device[s] = stage_row[s];
  bool any_split = false, any_fused = false;
  for (unsigned char v : split) (v ? any_split : any_fused) = true;
  PipelineSpec spec = PipelineSpec::explicit_map(stage_device, M, any_split);
  if (any_split && any_fused) spec.split_override = split;
  spec.placement_name = placement_kind(stage_device, D);
  spec.validate();

  Hint h;
  h.name = "csv:" + source;
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  const TaskGraph& g = *h.graph;
  h.order.assign(D, {});
  bool any_overlap = false;
  for (int r = 0; r < D; ++r)
    for (const CsvAction& a : rows[r]) {
      bool sp = g.spec().is_split(a.stage, a.mb);
      Kind k = a.kind == 'F' ? Kind::F : a.kind == 'W' ? Kind::W : a.kind == 'I' || sp ? Kind::B : Kind::BW;
      h.order[r].push_back(g.find(k, a.stage, a.mb));
      any_overlap = any_overlap || a.overlap_next;
    }
  if (any_overlap) {
    h.overlap_next.assign(D, {});
    for (int r = 0; r < D; ++r)
      for (const CsvAction& a : rows[r]) h.overlap_next[r].push_back(a.overlap_next);
  }
  h.finalize();
  return h;
}

Hint import_csv_file(const std::string& path) {
  std::string text = read_file_capped(path, "schedule", std::size_t{256} << 20);  // schedules are small
  // A UTF-8 byte order mark (spreadsheet exports write one) is not a cell.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return import_csv(text, path);
}

std::vector<std::string> csv_cells(const Hint& hint, int device) {
  const TaskGraph& g = *hint.graph;
  const auto& row = hint.order[device];
  const bool marks = !hint.overlap_next.empty();
  std::vector<std::string> cells;
  for (size_t i = 0; i < row.size(); ++i) {
    if (marks && hint.overlap_next[device][i] && i + 1 < row.size()) {
      std::string c = "(" + g.label(row[i]);
      while (hint.overlap_next[device][i] && i + 1 < row.size()) c += ';' + g.label(row[++i]);
      cells.push_back(c + ")OVERLAP_F_B");
    } else {
      cells.push_back(g.label(row[i]));
    }
  }
  return cells;
}

std::vector<std::vector<std::string>> csv_rows(const Hint& hint) {
  std::vector<std::vector<std::string>> rows;
  for (int d = 0; d < hint.devices(); ++d) rows.push_back(csv_cells(hint, d));
  return rows;
}

std::string export_csv(const Hint& hint) {
  if (hint.spec().pipelines() > 1)
    throw SpecError(fmt::format("hint '{}' runs {} pipelines ({}); PyTorch's CSV names a stage by its index alone, "
                                "so it cannot say which copy of a stage a row holds{}",
                                hint.name, hint.spec().pipelines(), hint.spec().placement_name,
                                hint.spec().placement_name.find("data-parallel") != std::string::npos
                                    ? " (export one replica's hint, without --data-parallel: every replica runs it, "
                                      "as with PyTorch's schedules)"
                                    : ""));
  std::string out;
  for (const auto& cells : csv_rows(hint)) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += cells[i];
    }
    out += '\n';
  }
  return out;
}

}  // namespace rrfp
