// Hanayo (Liu et al.): a wave-like placement without weight replication. With
// W waves on D devices the model has 2WD stages; stage s sits at position
// k = s mod 2D of a wave, on device k (going down) or 2D-1-k (coming back).
// One wave is the V-shape. The order comes from the greedy list scheduler
// with 2W(D) stage-microbatches in flight per device (1F1B's memory, as each
// stage is 1/(2W) of a device's share).
#include <fmt/format.h>

#include "hints/gen_zoo.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

Hint gen_hanayo(const HintParams& p) {
  check_params(p, "hanayo");
  check_no_chunks(p, "hanayo");
  const int D = p.stages, W = p.waves == 0 ? 1 : p.waves;
  if (W < 1 || W > 64) throw SpecError(fmt::format("hint 'hanayo' needs 1..64 waves (got {})", p.waves));
  std::vector<int> place(static_cast<size_t>(2) * W * D);
  for (size_t s = 0; s < place.size(); ++s) {
    int k = static_cast<int>(s % (2 * D));
    place[s] = k < D ? k : 2 * D - 1 - k;
  }
  PipelineSpec spec = PipelineSpec::explicit_map(std::move(place), p.microbatches, resolve_split(p, false));
  spec.placement_name = "hanayo";
  Hint h;
  h.name = "hanayo";
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  ListSchedOptions opt;
  opt.cap.assign(D, 2 * W * D);
  list_schedule(h, opt);
  return h;
}

}  // namespace rrfp
