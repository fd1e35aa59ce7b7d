// Chimera (Li & Hoefler): two pipelines in opposite directions over the same
// D devices. Microbatches 0..M/2-1 flow down (stage s on device s), the rest
// flow up (stage s on device D-1-s); every device holds one stage of each
// direction, so weights are replicated twice and the replicas' gradients are
// all-reduced after the iteration (the simulator charges that). The order is
// built by the greedy list scheduler (backward first, forwards under a cap of
// D in-flight per device, alternating directions). chimera-asym: the
// asymmetric variant (arXiv 2605.24006) whose two directions cut the layers
// at different points.
#include <fmt/format.h>

#include "hints/gen_zoo.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

namespace {

// The two pipelines over `placement`, M/2 microbatches each, ordered by the
// list scheduler under `cap` forwards in flight per device.
Hint bidirectional(const char* name, std::vector<std::vector<int>> placement, int D, int M, bool split, int cap) {
  PipelineSpec spec;
  spec.stages = static_cast<int>(placement[0].size());
  spec.devices = D;
  spec.microbatches = M;
  spec.split_backward = split;
  spec.placement = std::move(placement);
  spec.mb_pipeline.resize(M);
  for (int m = 0; m < M; ++m) spec.mb_pipeline[m] = m < M / 2 ? 0 : 1;
  spec.placement_name = name;
  Hint h;
  h.name = name;
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  ListSchedOptions opt;
  opt.cap.assign(D, cap);
  // Alternate the directions: the k-th microbatch of each pipeline share a key.
  const int half = M / 2;
  opt.key = [half](const Task& t) {
    long long k = t.mb < half ? 2LL * t.mb : 2LL * (t.mb - half) + 1;
    return k * kMaxStages - t.stage;
  };
  list_schedule(h, opt);
  return h;
}

void check_even(const HintParams& p, const char* name) {
  check_params(p, name);
  check_no_chunks(p, name);
  if (p.stages % 2 != 0)
    throw SpecError(fmt::format("hint '{}' needs an even number of devices (got {})", name, p.stages));
  if (p.microbatches % 2 != 0)
    throw SpecError(fmt::format("hint '{}' needs an even number of microbatches (got {})", name, p.microbatches));
}

}  // namespace

Hint gen_chimera(const HintParams& p) {
  check_even(p, "chimera");
  const int D = p.stages;
  std::vector<std::vector<int>> placement(2, std::vector<int>(D));
  for (int s = 0; s < D; ++s) {
    placement[0][s] = s;
    placement[1][s] = D - 1 - s;
  }
  return bidirectional("chimera", std::move(placement), D, p.microbatches, resolve_split(p, false), D);
}

// Each direction cuts the 2D-1 stages into D contiguous device groups, at
// interleaved boundaries: down after stages 0, 2, 4, ... (device 0 holds
// {0}, device d > 0 holds {2d-1, 2d}), up after stages 1, 3, 5, ...
// (device D-1 holds {0, 1}, ..., device 0 holds {2D-2}). So the two
// directions' layer cuts are independent: an odd stage is the layers
// between a down cut and the next up cut.
Hint gen_chimera_asym(const HintParams& p) {
  check_even(p, "chimera-asym");
  const int D = p.stages, S = 2 * D - 1;
  std::vector<std::vector<int>> placement(2, std::vector<int>(S));
  for (int s = 0; s < S; ++s) {
    placement[0][s] = (s + 1) / 2;
    placement[1][s] = D - 1 - s / 2;
  }
  // A device holds up to two consecutive stages of a direction, so a
  // microbatch in flight there counts twice against the cap.
  return bidirectional("chimera-asym", std::move(placement), D, p.microbatches, resolve_split(p, false), 2 * D);
}

}  // namespace rrfp
