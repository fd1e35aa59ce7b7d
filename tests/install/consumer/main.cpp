// Uses the installed headers and library: builds a hint, replays it and
// prints its unit-cost makespan (3(M+S-1) for 1F1B with F=B=W=1).
#include <cstdio>

#include <rrfp/hints/generators.hpp>  // installed under include/rrfp/
#include <rrfp/hints/replay.hpp>

int main() {
  rrfp::HintParams p;
  p.stages = 4;
  p.microbatches = 8;
  rrfp::Hint h = rrfp::make_hint("1f1b", p);
  rrfp::ReplayResult r = rrfp::replay_unit(h);
  std::printf("%s %d tasks, unit makespan %g\n", h.name.c_str(), h.graph->size(), r.makespan);
  return r.complete && r.makespan == 33 ? 0 : 1;
}
