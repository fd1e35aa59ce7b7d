// ZB-V (Qi et al.): two chunks per device in a V (device d holds model
// stages d and 2D-1-d), split backward, built by the greedy list scheduler
// (B > F > W) with 2D chunk-microbatches in flight per device: each chunk is
// half a 1F1B stage, so this is 1F1B's activation memory. A smaller cap can
// stall: device 0 must keep room for the returning chunk-1 forward.
#include <fmt/format.h>

#include "hints/generators.hpp"
#include "hints/list_sched.hpp"

namespace rrfp {

Hint gen_zbv(const HintParams& p) {
  check_params(p, "zbv");
  require_split(p, "zbv");
  if (p.chunks != 0 && p.chunks != 2)
    throw SpecError(fmt::format("hint 'zbv' always puts 2 chunks on each device (got --chunks {})", p.chunks));
  Hint h;
  h.name = "zbv";
  h.graph = std::make_shared<TaskGraph>(PipelineSpec::vshape(p.stages, p.microbatches, true));
  ListSchedOptions opt;
  opt.cap.assign(p.stages, 2 * p.stages);
  list_schedule(h, opt);
  return h;
}

}  // namespace rrfp
