#include "hints/validate.hpp"

#include <fmt/format.h>

namespace rrfp {

std::string backward_form(const PipelineSpec& spec) {
  if (spec.mixed_backward()) return "mixed";
  return spec.is_split(0, 0) ? "split" : "fused";
}

namespace {
// Per stage and microbatch, the device order must have F before the
// backward and the input backward before W; otherwise the device would
// wait on itself.
void check_pass_order(const Hint& h) {
  const TaskGraph& g = *h.graph;
  for (int id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    int before = -1;
    if (is_backward(t.kind)) before = g.find(Kind::F, t.stage, t.mb);
    if (t.kind == Kind::W) before = g.find(Kind::B, t.stage, t.mb);
    if (before >= 0 && h.rank[before] > h.rank[id])
      throw SpecError(fmt::format("hint '{}': device {} runs {} (position {}) before {} (position {}), which it needs",
                                  h.name, t.device, g.label(id), h.rank[id], g.label(before), h.rank[before]));
  }
}
}  // namespace

ValidationReport validate_hint(const Hint& hint) {
  Hint h = hint;
  h.finalize();  // every task exactly once, on its device
  check_pass_order(h);
  ValidationReport rep;
  const PipelineSpec& sp = h.spec();
  rep.ranks = sp.devices;
  rep.stages = sp.stages;
  rep.microbatches = sp.microbatches;
  rep.placement_name = sp.placement_name;
  rep.placement = sp.placement[0];
  rep.backward = backward_form(sp);
  rep.replay = replay_unit(h);
  if (!rep.replay.complete)
    throw SpecError(fmt::format("hint '{}' deadlocks: {}\n{}", h.name, rep.replay.stuck, timeline_grid(h, rep.replay)));
  return rep;
}

}  // namespace rrfp
