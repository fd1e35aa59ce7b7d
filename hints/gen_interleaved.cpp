// Megatron-LM's interleaved 1F1B: each of the p devices holds v chunks
// (model stage c*p + d on device d). Virtual microbatches are taken in
// groups of p: group g runs microbatches g*p..g*p+p-1 through chunk 0, then
// the same p through chunk 1, and so on; backwards visit the chunks in
// reverse. Device d runs 2(p-1-d) + (v-1)p warm-up forwards (all of them
// when M == p), then one forward one backward, then the remaining backwards.
#include <algorithm>

#include <fmt/format.h>

#include "hints/gen_util.hpp"
#include "hints/generators.hpp"

namespace rrfp {

Hint gen_interleaved_1f1b(const HintParams& p) {
  check_params(p, "interleaved-1f1b");
  const int P = p.stages, v = p.chunks, M = p.microbatches;
  if (v < 2)
    throw SpecError(fmt::format("hint 'interleaved-1f1b' needs --chunks v >= 2 model stages per device (got {})",
                                v == 0 ? "none" : std::to_string(v)));
  if (M % P != 0)
    throw SpecError(fmt::format("hint 'interleaved-1f1b' needs the microbatches ({}) to be a multiple of the "
                                "pipeline devices ({})",
                                M, P));
  Hint h;
  h.name = "interleaved-1f1b";
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::interleaved(P, v, M, resolve_split(p, false)));
  const TaskGraph& g = *h.graph;
  h.order.assign(P, {});
  const int total = v * M;
  // Virtual microbatch k of device d: its chunk and its microbatch.
  auto chunk_of = [&](int k, bool forward) {
    int c = (k % (P * v)) / P;
    return forward ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (P * v)) * P + k % P; };
  for (int d = 0; d < P; ++d) {
    auto& row = h.order[d];
    auto fwd = [&](int k) { row.push_back(g.find(Kind::F, chunk_of(k, true) * P + d, mb_of(k))); };
    auto bwd = [&](int k) { push_backward(g, row, chunk_of(k, false) * P + d, mb_of(k)); };
    int warm = M == P ? total : std::min(total, 2 * (P - 1 - d) + (v - 1) * P);
    for (int k = 0; k < warm; ++k) fwd(k);
    for (int i = 0; i < total - warm; ++i) {
      fwd(warm + i);
      bwd(i);
    }
    for (int k = total - warm; k < total; ++k) bwd(k);
  }
  h.finalize();
  return h;
}

}  // namespace rrfp
