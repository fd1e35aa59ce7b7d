// DualPipeV (DeepSeek): V-shape on D devices (device r holds model stages r
// and 2D-1-r), M >= 2D microbatches. Each rank runs eight phases whose
// lengths depend on its position; in the steady phase a forward of one chunk
// overlaps a full backward of the other. Backwards issued in "zero-bubble"
// mode are split into I now and W later (a FIFO of deferred W passes); the
// others are fused. The order this builds equals PyTorch's reference file
// dualpipev_4rank_10mb.csv cell for cell (tested).
#include <deque>

#include <fmt/format.h>

#include "hints/gen_zoo.hpp"

namespace rrfp {

namespace {

struct Action {
  Kind kind;
  int stage, mb;
  bool overlap_next = false;
};

// Emits one rank's actions; chunk 0 is stage r, chunk 1 is stage 2D-1-r.
class RankPlan {
 public:
  RankPlan(int D, int r) : D_(D), r_(r) {}
  std::vector<Action> build(int M) {
    const int D = D_, r = r_;
    for (int i = 0; i < (D - r - 1) * 2; ++i) fwd(0);                 // 1: nF0
    for (int i = 0; i < r + 1; ++i) fwd(0), fwd(1);                    // 2: nF0F1
    for (int i = 0; i < D - r - 1; ++i) bwd(1, true), weight(), fwd(1);  // 3: nB1W1F1
    for (int i = 0; i < M - 2 * D + r + 1; ++i) {                      // 4: nF0B1F1B0
      if (i == 0 && r == D - 1) fwd(0), bwd(1, false);
      else overlapped(0, 1);
      overlapped(1, 0);
    }
    for (int i = 0; i < D - r - 1; ++i) bwd(1, false), overlapped(1, 0);  // 5: nB1F1B0
    bool zb = false;                                                      // 6: nB1B0
    for (int i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1) zb = true;
      bwd(1, zb);
      if (i == (r + 1) / 2 && r % 2 == 0) zb = true;
      bwd(0, zb);
    }
    for (int i = 0; i < D - r - 1; ++i) weight(), bwd(0, true);        // 7: nWB0
    for (int i = 0; i < r + 1; ++i) weight();                          // 8: nW
    return std::move(out_);
  }

 private:
  int stage(int chunk) const { return chunk == 0 ? r_ : 2 * D_ - 1 - r_; }
  void fwd(int c) { out_.push_back({Kind::F, stage(c), f_[c]++}); }
  void bwd(int c, bool zero_bubble) {
    int mb = b_[c]++;
    out_.push_back({zero_bubble ? Kind::B : Kind::BW, stage(c), mb});
    if (zero_bubble) deferred_.push_back({Kind::W, stage(c), mb});
  }
  void weight() {
    out_.push_back(deferred_.front());
    deferred_.pop_front();
  }
  void overlapped(int fwd_chunk, int bwd_chunk) {
    fwd(fwd_chunk);
    out_.back().overlap_next = true;
    bwd(bwd_chunk, false);
  }
  int D_, r_;
  int f_[2] = {0, 0}, b_[2] = {0, 0};
  std::deque<Action> deferred_;
  std::vector<Action> out_;
};

}  // namespace

Hint gen_dualpipev(const HintParams& p) {
  check_params(p, "dualpipev");
  if (p.chunks != 0 && p.chunks != 2)
    throw SpecError(fmt::format("hint 'dualpipev' always puts 2 chunks on each device (got --chunks {})", p.chunks));
  if (p.split == 0) throw SpecError("hint 'dualpipev' mixes split and fused backwards; --fused is not available");
  const int D = p.stages, M = p.microbatches;
  if (M < 2 * D)
    throw SpecError(fmt::format("hint 'dualpipev' needs at least 2 x devices = {} microbatches (got {})", 2 * D, M));
  std::vector<std::vector<Action>> plan;
  for (int r = 0; r < D; ++r) plan.push_back(RankPlan(D, r).build(M));
  PipelineSpec spec = PipelineSpec::vshape(D, M, true);
  spec.split_override.assign(static_cast<size_t>(spec.stages) * M, 0);
  for (const auto& row : plan)
    for (const Action& a : row)
      if (a.kind == Kind::B) spec.split_override[static_cast<size_t>(a.stage) * M + a.mb] = 1;
  Hint h;
  h.name = "dualpipev";
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  h.order.assign(D, {});
  h.overlap_next.assign(D, {});
  for (int r = 0; r < D; ++r)
    for (const Action& a : plan[r]) {
      h.order[r].push_back(h.graph->find(a.kind, a.stage, a.mb));
      h.overlap_next[r].push_back(a.overlap_next ? 1 : 0);
    }
  h.finalize();
  return h;
}

}  // namespace rrfp
