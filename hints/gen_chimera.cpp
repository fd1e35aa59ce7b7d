// Chimera (Li & Hoefler): two pipelines in opposite directions over the same
// D devices. Microbatches 0..M/2-1 flow down (stage s on device s), the rest
// flow up (stage s on device D-1-s); every device holds one stage of each
// direction, so weights are replicated twice and the replicas' gradients are
// all-reduced after the iteration (the simulator charges that). The order is
// built by the greedy list scheduler (backward first, forwards under a cap of
// D in-flight per device, alternating directions).
#include <fmt/format.h>

#include "hints/gen_zoo.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

Hint gen_chimera(const HintParams& p) {
  check_params(p, "chimera");
  check_no_chunks(p, "chimera");
  const int D = p.stages, M = p.microbatches;
  if (D % 2 != 0) throw SpecError(fmt::format("hint 'chimera' needs an even number of devices (got {})", D));
  if (M % 2 != 0) throw SpecError(fmt::format("hint 'chimera' needs an even number of microbatches (got {})", M));
  PipelineSpec spec;
  spec.stages = spec.devices = D;
  spec.microbatches = M;
  spec.split_backward = resolve_split(p, false);
  spec.placement.assign(2, std::vector<int>(D));
  for (int s = 0; s < D; ++s) {
    spec.placement[0][s] = s;
    spec.placement[1][s] = D - 1 - s;
  }
  spec.mb_pipeline.resize(M);
  for (int m = 0; m < M; ++m) spec.mb_pipeline[m] = m < M / 2 ? 0 : 1;
  spec.placement_name = "chimera";
  Hint h;
  h.name = "chimera";
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  ListSchedOptions opt;
  opt.cap.assign(D, D);
  // Alternate the directions: the k-th microbatch of each pipeline share a key.
  const int half = M / 2;
  opt.key = [half](const Task& t) {
    long long k = t.mb < half ? 2LL * t.mb : 2LL * (t.mb - half) + 1;
    return k * kMaxStages - t.stage;
  };
  list_schedule(h, opt);
  return h;
}

}  // namespace rrfp
