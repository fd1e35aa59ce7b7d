// Zero-bubble ZB-H1 and ZB-H2 (Qi et al.), built by the greedy list
// scheduler: B > F > W, W deferred into the steps where nothing else is
// ready. The in-flight cap sets the memory budget:
//   ZB-H1: S-d on device d, the same activation memory as 1F1B;
//   ZB-H2: 2(S-d)-1, more warm-up forwards fill the start-up bubble.
// With F=B=W=1 and M >= S both reach 3M+S-1, which is optimal: the last
// device cannot start before step S-1 and has 3M unit tasks to run.
#include "hints/generators.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

namespace {
Hint zb_linear(const char* name, const HintParams& p, int extra) {
  check_params(p, name);
  check_no_chunks(p, name);
  require_split(p, name);
  Hint h;
  h.name = name;
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::linear(p.stages, p.microbatches, true));
  ListSchedOptions opt;
  // extra = 0: S-d (ZB-H1); extra = 1: 2(S-d)-1 (ZB-H2).
  for (int d = 0; d < p.stages; ++d) opt.cap.push_back(extra ? 2 * (p.stages - d) - 1 : p.stages - d);
  list_schedule(h, opt);
  return h;
}
}  // namespace

Hint gen_zb_h1(const HintParams& p) { return zb_linear("zb-h1", p, 0); }
Hint gen_zb_h2(const HintParams& p) { return zb_linear("zb-h2", p, 1); }

}  // namespace rrfp
