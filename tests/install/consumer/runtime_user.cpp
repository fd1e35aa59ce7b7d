// Links the runtime through the installed package: resolves the policy
// names StarPU would get, without starting StarPU.
#include <cstdio>

#include <rrfp/runtime/executor.hpp>
#include <rrfp/sched/policy_registry.hpp>

int main() {
  const rrfp::PolicyChoice c = rrfp::resolve_policy("rrfp-fixed");
  std::printf("policy %s\n", c.name.c_str());
  return c.name == "rrfp-fixed" ? 0 : 1;
}
