#include "train/run_shape.hpp"

#include <fmt/format.h>

#include "hints/generators.hpp"
#include "hints/replicate.hpp"
#include "sched/memory_budget.hpp"
#include "sim/plan.hpp"
#include "train/trainer_io.hpp"

namespace rrfp::train {

namespace {

// Before replicated(): --microbatches counts one replica's, --batch-size
// every replica's sequences.
long long microbatches_of_step(const TrainOptions& o) { return static_cast<long long>(o.microbatches) * o.data_parallel; }

int micro_batch_of(const TrainOptions& o) {
  return o.batch_size > 0 ? static_cast<int>(o.batch_size / microbatches_of_step(o)) : o.micro_batch_size;
}

ResolvedRun resolve_plan(TrainOptions o) {
  const Plan plan = read_plan(o.plan_path);
  nlohmann::json config = gpt_json(o.gpt);
  if (o.model == "mm-tiny") config["enc_layers"] = o.enc_layers;
  if (plan.model != o.model || !same_model_config(plan.config, config))  // default widths spelled out or not
    throw SpecError(fmt::format("plan '{}' was tuned for {} {}, this run trains {} {}", o.plan_path, plan.model,
                                plan.config.dump(), o.model, config.dump()));
  o.stages = plan.devices;
  o.microbatches = plan.microbatches;
  o.data_parallel = plan_replicas(plan, o.data_parallel);  // replicated() then runs the plan's replicas
  if (plan.tensor_parallel > 1 && o.executor != "starpu")  // named here: the user gave no --tensor-parallel
    throw SpecError(fmt::format("plan '{}' runs every device as a tensor-parallel group of {}, which needs the StarPU "
                                "executor (its members run concurrently), not --executor {}",
                                o.plan_path, plan.tensor_parallel, o.executor));
  o.tensor_parallel = plan_members(plan, o.tensor_parallel);  // each of the plan's devices a group of these
  if (o.batch_size > 0 && o.batch_size % microbatches_of_step(o) != 0)
    throw SpecError(fmt::format("--batch-size {} cannot be divided into plan '{}''s {} microbatches{} of equal size",
                                o.batch_size, o.plan_path, o.microbatches,
                                o.data_parallel > 1 ? fmt::format(" x {} replicas", o.data_parallel) : ""));
  if (const int b = micro_batch_of(o); plan.micro_batch_size != b)
    throw SpecError(fmt::format("plan '{}' was tuned for micro-batch size {}, this run has {} ({})", o.plan_path,
                                plan.micro_batch_size, b,
                                o.batch_size > 0 ? fmt::format("--batch-size {} over {} microbatches", o.batch_size,
                                                               microbatches_of_step(o))
                                                 : std::string("--micro-batch-size")));
  o.chunks = 0;
  o.partition = plan.counts;
  Hint h = plan_hint(plan);
  o.hint = h.name;
  MemoryBudgetOptions budget;
  if (plan.memory_limit_bytes > 0) {  // enforced, as the tuner simulated it (sim/plan.cpp, estimate_step)
    budget.stage_bytes = plan.costs.activation_bytes;
    budget.release_at_w = true;
    budget.device_bytes = activation_budget(h, plan.costs, plan.memory_limit_bytes);
    for (int d = 0; d < plan.devices; ++d)
      if (budget.device_bytes[d] < 0)
        throw SpecError(fmt::format("plan '{}': device {}'s weights and AdamW state alone exceed its memory limit of "
                                    "{}", o.plan_path, d, mib_text(plan.memory_limit_bytes)));
  }
  return {std::move(o), std::move(h), std::move(budget)};
}

// --data-parallel D: the resolved run's hint replicated D times; its
// microbatches (and --batch-size) count every replica's from here on.
ResolvedRun replicated(ResolvedRun r) {
  const int D = r.o.data_parallel;
  if (D == 1) return r;
  r.hint = replicate(r.hint, D);
  r.o.hint = r.hint.name;
  r.o.stages = r.hint.devices();
  r.o.microbatches = r.hint.spec().microbatches;
  auto& dev = r.memory_budget.device_bytes;  // a plan's limit holds for each replica's devices alike
  const std::vector<double> one(dev);
  for (int k = 1; k < D; ++k) dev.insert(dev.end(), one.begin(), one.end());
  return r;
}

// One replica's run: the plan, a hint built in code, or a named hint.
ResolvedRun resolve_one_replica(TrainOptions o) {
  if (!o.plan_path.empty()) return resolve_plan(std::move(o));
  if (o.hint_object) {
    Hint h = *o.hint_object;
    o.stages = h.devices();
    o.microbatches = h.spec().microbatches;
    o.hint = h.name;
    return {std::move(o), std::move(h), {}};
  }
  HintParams hp;
  hp.stages = o.stages;
  hp.microbatches = o.microbatches;
  hp.chunks = o.chunks;
  hp.split = o.split;
  Hint h = make_hint(o.hint, hp);
  o.stages = h.devices();
  o.microbatches = h.spec().microbatches;
  return {std::move(o), std::move(h), {}};
}

}  // namespace

ResolvedRun resolve_run(TrainOptions o) {
  if (o.data_parallel < 1)
    throw SpecError(fmt::format("--data-parallel must be at least 1 replica, got {}", o.data_parallel));
  return replicated(resolve_one_replica(std::move(o)));
}

}  // namespace rrfp::train
