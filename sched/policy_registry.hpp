// Which StarPU scheduling policy a run uses, chosen the way StarPU users
// already choose: STARPU_SCHED. Our names select our policies, any other
// name passes through to StarPU's built-ins, RRFP_SCHED_LIB loads a plug-in.
#pragma once

#include <string>
#include <vector>

#include <starpu.h>

namespace rrfp {

struct PolicyChoice {
  enum class Kind { Rrfp, RrfpFixed, RrfpWait, StaticOrder, Builtin, Plugin };
  Kind kind = Kind::Rrfp;
  std::string name;                        // as reported ("rrfp", "prio", the plug-in's name)
  starpu_sched_policy* policy = nullptr;   // ours or the plug-in's; null for built-ins
  std::string builtin;                     // StarPU name for Builtin and StaticOrder
  bool uses_arbiter() const { return kind == Kind::Rrfp || kind == Kind::RrfpFixed || kind == Kind::RrfpWait; }
};

// `requested` wins; "" reads STARPU_SCHED; unset means "rrfp-wait".
// With RRFP_SCHED_LIB=/path/lib.so the library's
// starpu_get_sched_lib_policy(name) provides the policy (name may be null).
// Throws SpecError for unknown or unusable names, missing libraries or symbols.
PolicyChoice resolve_policy(const std::string& requested = "");

// Our names and StarPU's built-in names that run rrfp's graphs (not the
// modular ones that stall or abort on them), for messages and --help.
std::vector<std::string> known_policies();

}  // namespace rrfp
