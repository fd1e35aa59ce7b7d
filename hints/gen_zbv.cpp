// ZB-V (Qi et al.): two chunks per device in a V (device d holds model
// stages d and 2D-1-d), split backward. Every chunk-microbatch's W follows
// its B soon enough that a device holds at most 2D chunks until their W:
// each chunk is half a 1F1B stage, so this is 1F1B's activation memory
// (W still reads what F saved, so memory lasts until W, not until B).
//
// The order is built in the paper's phases (as PyTorch's
// ScheduleZBVZeroBubble does), for device d of D:
//   1. 2(D-d)-1 chunk-0 forwards;
//   2. d pairs (chunk-1 forward, chunk-0 forward);
//   3. D-d times: chunk-1 F, B, W (the V's turn on this device);
//   4. steady: chunk-0 F (while any is left), B, W; chunk-1 F, B, W;
//   5. drain: d pairs of B (chunk 0, chunk 1) with their W deferred, D-d
//      times chunk-0 B and the oldest chunk-0 W, then the deferred W.
// With F=B=W=1 and M >= 2D-1 this reaches 6M+D-1, which is optimal. With
// fewer microbatches the phases are not defined: the greedy list scheduler
// (B > F > W) builds the order with 2D in flight, held as little as its
// best makespan allows.
#include <algorithm>

#include <fmt/format.h>

#include "hints/generators.hpp"
#include "hints/list_sched.hpp"
#include "hints/replay.hpp"

namespace rrfp {

namespace {
void zbv_phases(Hint& h, int D, int M) {
  const TaskGraph& g = *h.graph;
  h.order.assign(D, {});
  for (int d = 0; d < D; ++d) {
    auto& row = h.order[d];
    const int c0 = d, c1 = 2 * D - 1 - d;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    auto push = [&](Kind k, int stage, int m) { row.push_back(g.find(k, stage, m)); };
    for (int i = 0; i < 2 * (D - d) - 1; ++i) push(Kind::F, c0, f0++);
    for (int i = 0; i < d; ++i) {
      push(Kind::F, c1, f1++);
      push(Kind::F, c0, f0++);
    }
    for (int i = 0; i < D - d; ++i, ++f1, ++b1) {
      push(Kind::F, c1, f1);
      push(Kind::B, c1, b1);
      push(Kind::W, c1, b1);
    }
    while (f1 < f0 || f0 < M) {
      if (f0 < M) push(Kind::F, c0, f0++);
      push(Kind::B, c0, b0);
      push(Kind::W, c0, b0++);
      push(Kind::F, c1, f1++);
      push(Kind::B, c1, b1);
      push(Kind::W, c1, b1++);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < d; ++i) {
      push(Kind::B, c0, b0++);
      push(Kind::B, c1, b1++);
    }
    for (int i = 0; i < D - d; ++i) {
      push(Kind::B, c0, b0++);
      push(Kind::W, c0, w0++);
    }
    while (w1 < b1) push(Kind::W, c1, w1++);
    while (w0 < b0) push(Kind::W, c0, w0++);
  }
  h.finalize();
}
}  // namespace

Hint gen_zbv(const HintParams& p) {
  check_params(p, "zbv");
  require_split(p, "zbv");
  if (p.chunks != 0 && p.chunks != 2)
    throw SpecError(fmt::format("hint 'zbv' always puts 2 chunks on each device (got --chunks {})", p.chunks));
  Hint h;
  h.name = "zbv";
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::vshape(p.stages, p.microbatches, true));
  if (p.microbatches >= 2 * p.stages - 1) {
    zbv_phases(h, p.stages, p.microbatches);
    return h;
  }
  // Fewer microbatches: the list scheduler with 2D in flight, and the
  // smallest held cap that gives its best makespan (2D can cost a step or
  // two at D >= 6; no held cap is the order before 2026-12-05).
  const int D = p.stages, most = std::max(2 * D, 2 * p.microbatches);  // a device holds at most 2M chunks
  Hint best;
  double best_makespan = 0;
  for (int held = 2 * D; held <= most; ++held) {
    Hint t = h;
    ListSchedOptions opt;
    opt.cap.assign(D, 2 * D);
    opt.held_cap.assign(D, held);
    list_schedule(t, opt);
    const double m = replay_unit(t).makespan;
    if (best.order.empty() || m < best_makespan) {
      best = std::move(t);
      best_makespan = m;
    }
  }
  return best;
}

}  // namespace rrfp
