#include "sched/policy_registry.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "graph/pipeline_spec.hpp"
#include "sched/rrfp_policy.hpp"

namespace rrfp {

namespace {

using LibPolicyFn = starpu_sched_policy* (*)(const char*);

// Plug-ins stay loaded for the life of the process: StarPU may still hold
// pointers into them after a run.
LibPolicyFn load_plugin(const std::string& var, const std::string& path) {
  static std::mutex m;
  static std::map<std::string, LibPolicyFn> loaded;
  std::lock_guard<std::mutex> g(m);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw SpecError(fmt::format("{}: cannot load '{}': {}", var, path, dlerror()));
  dlerror();
  void* sym = dlsym(h, "starpu_get_sched_lib_policy");
  if (!sym) {
    dlclose(h);
    throw SpecError(fmt::format(
        "{}: '{}' has no symbol starpu_get_sched_lib_policy, StarPU 1.4's plug-in entry point (see docs/plugins.md)",
        var, path));
  }
  LibPolicyFn fn;
  static_assert(sizeof(fn) == sizeof(sym));
  std::memcpy(&fn, &sym, sizeof fn);  // object pointer to function pointer, as dlsym requires
  loaded[path] = fn;
  return fn;
}

bool is_builtin(const std::string& name) {
  for (starpu_sched_policy** p = starpu_sched_get_predefined_policies(); *p; ++p)
    if ((*p)->policy_name && name == (*p)->policy_name) return true;
  return false;
}

// StarPU 1.4.10's built-ins that cannot run rrfp's graphs, whose tasks are
// restricted to their device's worker (task->workerids): on `rrfp bench
// --hint zb-h1 --stages 4 --microbatches 8` (2026-12-05) these stall with
// tasks no worker ever pops, or abort in component_sched.c's push. Refused
// by name up front instead of a silent stall and a timeout.
const char* unusable_reason(const std::string& name) {
  static const std::map<std::string, const char*> unusable = {
      {"modular-eager", "stalls"},         {"modular-eager-prefetching", "stalls"},
      {"modular-random", "stalls"},        {"modular-random-prefetching", "stalls"},
      {"modular-prandom", "stalls"},       {"modular-prandom-prio", "stalls"},
      {"modular-heft", "stalls"},          {"modular-heft-prio", "stalls"},
      {"modular-heft2", "stalls"},         {"modular-heteroprio", "stalls"},
      {"modular-pheft", "stalls"},         {"graph_test", "stalls (it waits for starpu_do_schedule)"},
      {"modular-dmda", "aborts"},          {"modular-dmdap", "aborts"},
      {"modular-dmdar", "aborts"},         {"modular-dmdas", "aborts"},
  };
  auto it = unusable.find(name);
  return it == unusable.end() ? nullptr : it->second;
}

}  // namespace

std::vector<std::string> known_policies() {
  std::vector<std::string> out = {"rrfp", "rrfp-wait", "rrfp-fixed", "static-order"};
  for (starpu_sched_policy** p = starpu_sched_get_predefined_policies(); *p; ++p)
    if ((*p)->policy_name && !unusable_reason((*p)->policy_name)) out.push_back((*p)->policy_name);
  return out;
}

PolicyChoice resolve_policy(const std::string& requested) {
  std::string name = requested;
  if (name.empty()) {
    const char* env = std::getenv("STARPU_SCHED");
    if (env) name = env;
  }
  PolicyChoice c;
  // StarPU 1.4's own STARPU_SCHED_LIB (RRFP_SCHED_LIB, the name used before
  // StarPU 1.4, still works). We load it ourselves so that a library without
  // the entry point, or without the policy asked for, is an error: StarPU
  // itself would warn and run lws instead.
  const char* var = "STARPU_SCHED_LIB";
  const char* lib = std::getenv(var);
  if (!lib || !*lib) lib = std::getenv(var = "RRFP_SCHED_LIB");
  if (lib && *lib) {
    LibPolicyFn fn = load_plugin(var, lib);
    starpu_sched_policy* p = fn(name.empty() ? nullptr : name.c_str());
    if (!p)
      throw SpecError(fmt::format("{}: '{}' has no policy named '{}'", var, lib, name.empty() ? "(default)" : name));
    c.kind = PolicyChoice::Kind::Plugin;
    c.policy = p;
    c.name = p->policy_name ? p->policy_name : (name.empty() ? "plugin" : name);
    return c;
  }
  // The default: readiness-first with bounded waits, the rule that never
  // lost to the fixed order on issue 16's grid (docs/runtime.md).
  if (name.empty()) name = "rrfp-wait";
  c.name = name;
  if (name == "rrfp") {
    c.kind = PolicyChoice::Kind::Rrfp;
    c.policy = rrfp_policy();
  } else if (name == "rrfp-fixed") {
    c.kind = PolicyChoice::Kind::RrfpFixed;
    c.policy = rrfp_fixed_policy();
  } else if (name == "rrfp-wait") {
    c.kind = PolicyChoice::Kind::RrfpWait;
    c.policy = rrfp_wait_policy();
  } else if (name == "static-order") {
    // Tasks are pinned and ordered, so they bypass the policy; eager only
    // has to exist.
    c.kind = PolicyChoice::Kind::StaticOrder;
    c.builtin = "eager";
  } else if (const char* why = is_builtin(name) ? unusable_reason(name) : nullptr) {
    std::string usable;
    for (const std::string& k : known_policies()) usable += (usable.empty() ? "" : ", ") + k;
    throw SpecError(fmt::format("scheduling policy '{}' (STARPU_SCHED): StarPU's own {} {} on rrfp's graphs, whose "
                                "tasks are pinned to a worker with task->workerids (docs/runtime.md); usable: {}",
                                name, name, why, usable));
  } else if (is_builtin(name)) {
    c.kind = PolicyChoice::Kind::Builtin;
    c.builtin = name;
  } else {
    std::string known;
    for (const std::string& k : known_policies()) known += (known.empty() ? "" : ", ") + k;
    throw SpecError(fmt::format("unknown scheduling policy '{}' (--policy or STARPU_SCHED); known: {}", name, known));
  }
  return c;
}

}  // namespace rrfp
