// Zero-bubble ZB-H1 and ZB-H2 (Qi et al.), split backward. Activations live
// until W (W still reads what F saved), so both bound the forwards whose W
// is not done, not only those whose B is not:
//   ZB-H1: 1F1B's order with device d's W deferred by d microbatches (W of
//     m right after B of m + d, the rest at the end), as PyTorch's
//     ZB1P: every device holds at most S, 1F1B's peak on device 0;
//   ZB-H2: the greedy list scheduler (B > F > W, W into the bubbles) with
//     2(S-d)-1 forwards in flight and 2S-1 held on every device: more
//     warm-up forwards fill the start-up bubble, about twice the memory.
// With F=B=W=1 and M >= S both reach 3M+S-1, which is optimal: the last
// device cannot start before step S-1 and has 3M unit tasks to run.
#include <algorithm>

#include "hints/generators.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

namespace {
Hint zb_start(const char* name, const HintParams& p) {
  check_params(p, name);
  check_no_chunks(p, name);
  require_split(p, name);
  Hint h;
  h.name = name;
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::linear(p.stages, p.microbatches, true));
  return h;
}
}  // namespace

Hint gen_zb_h1(const HintParams& p) {
  Hint h = zb_start("zb-h1", p);
  const TaskGraph& g = *h.graph;
  const int S = p.stages, M = p.microbatches;
  h.order.assign(S, {});
  for (int d = 0; d < S; ++d) {
    auto& row = h.order[d];
    const int warm = std::min(S - 1 - d, M);
    int f = 0;
    for (; f < warm; ++f) row.push_back(g.find(Kind::F, d, f));
    for (int b = 0; b < M; ++b) {
      if (f < M) row.push_back(g.find(Kind::F, d, f++));
      row.push_back(g.find(Kind::B, d, b));
      if (b >= d) row.push_back(g.find(Kind::W, d, b - d));
    }
    for (int w = std::max(0, M - d); w < M; ++w) row.push_back(g.find(Kind::W, d, w));
  }
  h.finalize();
  return h;
}

Hint gen_zb_h2(const HintParams& p) {
  Hint h = zb_start("zb-h2", p);
  ListSchedOptions opt;
  for (int d = 0; d < p.stages; ++d) opt.cap.push_back(2 * (p.stages - d) - 1);
  opt.held_cap.assign(p.stages, 2 * p.stages - 1);  // device 0's in-flight cap, on every device
  list_schedule(h, opt);
  return h;
}

}  // namespace rrfp
