#include "graph/task_graph.hpp"

#include <fmt/format.h>

namespace rrfp {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::F: return "F";
    case Kind::B: return "B";
    case Kind::W: return "W";
    case Kind::BW: return "BW";
  }
  return "?";
}

char csv_letter(Kind k) {
  switch (k) {
    case Kind::F: return 'F';
    case Kind::B: return 'I';
    case Kind::W: return 'W';
    case Kind::BW: return 'B';
  }
  return '?';
}

TaskGraph::TaskGraph(PipelineSpec spec) : spec_(std::move(spec)) {
  spec_.validate();
  const int S = spec_.stages, M = spec_.microbatches;
  index_.assign(static_cast<size_t>(S) * M * kNumKinds, -1);
  tasks_.reserve(static_cast<size_t>(S) * M * 3);
  auto add = [&](Kind k, int s, int m) {
    index_[(static_cast<size_t>(s) * M + m) * kNumKinds + static_cast<int>(k)] = static_cast<int>(tasks_.size());
    tasks_.push_back({k, s, m, spec_.device_of(s, m)});
  };
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < M; ++m) {
      add(Kind::F, s, m);
      if (spec_.is_split(s, m)) {
        add(Kind::B, s, m);
        add(Kind::W, s, m);
      } else {
        add(Kind::BW, s, m);
      }
    }

  // Predecessor lists, then successors by transposition.
  const int n = size();
  pred_off_.assign(n + 1, 0);
  std::vector<int> tmp;
  for (int id = 0; id < n; ++id) {
    const Task& t = tasks_[id];
    tmp.clear();
    switch (t.kind) {
      case Kind::F:
        if (t.stage > 0) tmp.push_back(find(Kind::F, t.stage - 1, t.mb));
        break;
      case Kind::B:
      case Kind::BW:
        tmp.push_back(find(Kind::F, t.stage, t.mb));
        if (t.stage + 1 < S) tmp.push_back(backward_of(t.stage + 1, t.mb));
        break;
      case Kind::W:
        tmp.push_back(find(Kind::B, t.stage, t.mb));
        break;
    }
    pred_.insert(pred_.end(), tmp.begin(), tmp.end());
    pred_off_[id + 1] = static_cast<int>(pred_.size());
  }
  succ_off_.assign(n + 1, 0);
  for (int p : pred_) ++succ_off_[p + 1];
  for (int i = 0; i < n; ++i) succ_off_[i + 1] += succ_off_[i];
  succ_.resize(pred_.size());
  std::vector<int> fill(succ_off_.begin(), succ_off_.end() - 1);
  for (int id = 0; id < n; ++id)
    for (int p : preds(id)) succ_[fill[p]++] = id;
}

int TaskGraph::find(Kind k, int stage, int mb) const {
  if (stage < 0 || stage >= spec_.stages || mb < 0 || mb >= spec_.microbatches) return -1;
  return index_[(static_cast<size_t>(stage) * spec_.microbatches + mb) * kNumKinds + static_cast<int>(k)];
}

int TaskGraph::backward_of(int stage, int mb) const {
  int b = find(Kind::B, stage, mb);
  return b >= 0 ? b : find(Kind::BW, stage, mb);
}

std::string TaskGraph::label(int id) const {
  const Task& t = tasks_[id];
  return fmt::format("{}{}{}", t.stage, csv_letter(t.kind), t.mb);
}

std::vector<int> TaskGraph::topological_order(const std::vector<std::pair<int, int>>& also) const {
  const int n = size();
  std::vector<int> indeg(n), order;
  std::vector<std::vector<int>> after(also.empty() ? 0 : n);
  for (auto [b, a] : also) after[b].push_back(a), ++indeg[a];
  order.reserve(n);
  for (int i = 0; i < n; ++i) {
    indeg[i] += preds(i).size();
    if (indeg[i] == 0) order.push_back(i);
  }
  for (size_t h = 0; h < order.size(); ++h) {
    for (int s : succs(order[h]))
      if (--indeg[s] == 0) order.push_back(s);
    if (!also.empty())
      for (int s : after[order[h]])
        if (--indeg[s] == 0) order.push_back(s);
  }
  if (static_cast<int>(order.size()) != n) throw SpecError("task graph has a cycle");
  return order;
}

std::vector<int> TaskGraph::tasks_per_device() const {
  std::vector<int> c(spec_.devices, 0);
  for (const Task& t : tasks_) ++c[t.device];
  return c;
}

}  // namespace rrfp
