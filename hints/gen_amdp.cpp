#include "hints/gen_amdp.hpp"

#include <fmt/format.h>

#include "hints/list_sched.hpp"

namespace rrfp {

std::vector<std::vector<int>> amdp_placement(int P, int directions) {
  if (directions != 2 && directions != 4)
    throw SpecError(fmt::format("AMDP runs 2 or 4 directions, not {}", directions));
  if (P < 2 || P % directions != 0)
    throw SpecError(fmt::format("AMDP with {} directions needs a number of stages divisible by {} (got {})",
                                directions, directions, P));
  std::vector<std::vector<int>> pl(directions, std::vector<int>(P));
  for (int s = 0; s < P; ++s) {
    pl[0][s] = s;
    pl[1][s] = P - 1 - s;
    if (directions == 4) {  // distinct from the first two because P/2 is even
      pl[2][s] = (s + P / 2) % P;
      pl[3][s] = (3 * P / 2 - 1 - s) % P;
    }
  }
  return pl;
}

Hint amdp_hint(int P, int directions, int group, int groups) {
  amdp_placement(P, directions);  // its errors first: 3 directions is not a divisibility problem
  if (group < 1 || groups < 1 || group % directions != 0)
    throw SpecError(fmt::format("AMDP needs microbatches per iteration divisible by its {} directions (got {})",
                                directions, group));
  PipelineSpec spec;
  spec.stages = spec.devices = P;
  spec.microbatches = grouped_microbatches(group, groups);
  spec.split_backward = false;
  spec.placement = amdp_placement(P, directions);
  spec.mb_pipeline.resize(spec.microbatches);
  for (int m = 0; m < spec.microbatches; ++m) spec.mb_pipeline[m] = m % directions;
  spec.placement_name = fmt::format("amdp-{}", directions);
  spec.validate();
  Hint h;
  h.name = "amdp";
  h.graph = std::make_shared<TaskGraph>(std::move(spec));
  ListSchedOptions opt;
  // Chimera's activation budget per direction pair: P forwards in flight
  // per device for two directions, 2P for four.
  opt.cap.assign(P, P * directions / 2);
  opt.group = group;
  opt.gate_lag = 2;
  list_schedule(h, opt);
  return h;
}

}  // namespace rrfp
