// Simulator scale: 128 stages x 2048 microbatches, split backward (786,432
// tasks), readiness-first and strict, on one core. Target: under 1 s a run.
#include <benchmark/benchmark.h>

#include "hints/generators.hpp"
#include "hints/replay.hpp"
#include "sim/simulator.hpp"

namespace {

// The hint is generated once; the loop times the simulation alone.
void simulate_scale(benchmark::State& state, const char* hint, rrfp::Mode mode) {
  const rrfp::Hint h = rrfp::make_hint(hint, {128, 2048, 0, 1, 0});
  for (auto _ : state) {
    rrfp::SimOptions o;
    o.mode = mode;
    o.duration = [&h](int id) { return rrfp::unit_cost(h.graph->task(id).kind); };
    rrfp::SimResult r = rrfp::simulate(h, o);
    if (!r.complete) state.SkipWithError("simulation did not complete");
    state.counters["tasks"] = h.graph->size();
    benchmark::DoNotOptimize(r.makespan);
  }
}

}  // namespace

BENCHMARK_CAPTURE(simulate_scale, zb_h1_rrfp, "zb-h1", rrfp::Mode::ReadinessFirst)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(simulate_scale, zb_h1_fixed, "zb-h1", rrfp::Mode::Strict)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(simulate_scale, 1f1b_split_rrfp, "1f1b", rrfp::Mode::ReadinessFirst)->Unit(benchmark::kMillisecond)->Iterations(3);
void generate_hint(benchmark::State& state, const char* hint) {
  for (auto _ : state) benchmark::DoNotOptimize(rrfp::make_hint(hint, {128, 2048, 0, 1, 0}).order.size());
}

BENCHMARK_CAPTURE(generate_hint, zb_h1, "zb-h1")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(generate_hint, 1f1b_split, "1f1b")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
