// GPipe and 1F1B: the two classic fixed orders.
#include <algorithm>

#include "hints/gen_util.hpp"
#include "hints/generators.hpp"

namespace rrfp {

void push_backward(const TaskGraph& g, std::vector<int>& row, int s, int m) {
  int bw = g.find(Kind::BW, s, m);
  if (bw >= 0) {
    row.push_back(bw);
  } else {
    row.push_back(g.find(Kind::B, s, m));
    row.push_back(g.find(Kind::W, s, m));
  }
}

namespace {

Hint start_linear(const char* name, const HintParams& p, bool split) {
  check_params(p, name);
  check_no_chunks(p, name);
  Hint h;
  h.name = name;
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::linear(p.stages, p.microbatches, split));
  h.order.assign(p.stages, {});
  return h;
}
}  // namespace

Hint gen_gpipe(const HintParams& p) {
  Hint h = start_linear("gpipe", p, resolve_split(p, false));
  const TaskGraph& g = *h.graph;
  for (int s = 0; s < p.stages; ++s) {
    for (int m = 0; m < p.microbatches; ++m) h.order[s].push_back(g.find(Kind::F, s, m));
    for (int m = 0; m < p.microbatches; ++m) push_backward(g, h.order[s], s, m);
  }
  h.finalize();
  return h;
}

// Stage s runs min(S-1-s, M) warm-up forwards, then alternates one forward
// and one backward, then drains the remaining backwards.
Hint gen_1f1b(const HintParams& p) {
  Hint h = start_linear("1f1b", p, resolve_split(p, false));
  const TaskGraph& g = *h.graph;
  const int S = p.stages, M = p.microbatches;
  for (int s = 0; s < S; ++s) {
    int warm = std::min(S - 1 - s, M);
    int f = 0, b = 0;
    auto& row = h.order[s];
    for (; f < warm; ++f) row.push_back(g.find(Kind::F, s, f));
    while (f < M) {
      row.push_back(g.find(Kind::F, s, f++));
      push_backward(g, row, s, b++);
    }
    while (b < M) push_backward(g, row, s, b++);
  }
  h.finalize();
  return h;
}

}  // namespace rrfp
