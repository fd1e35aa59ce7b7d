// The machine as the runtime sees it (`rrfp topo`): hwloc's cores, NUMA
// nodes and GPUs with their PCI address and NUMA locality, and StarPU's
// workers with the CPUs each worker thread may really run on (read from
// inside the worker, so it shows what StarPU's binding did, not what it
// intended). StarPU does the binding; steer it with STARPU_WORKERS_NOBIND,
// STARPU_WORKERS_CPUID / COREID and STARPU_NCPU (docs/runtime.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rrfp {

struct Topology {
  std::string hwloc_version;
  int packages = 0, cores = 0, pus = 0;
  struct Numa {
    int index = 0;
    std::string cpus;  // PU list, e.g. "0-15"
    std::uint64_t bytes = 0;
  };
  std::vector<Numa> numa;
  struct Gpu {
    std::string name;  // OS device (cuda0, nvml0, card0) or the PCI vendor:device
    std::string pci;   // domain:bus:dev.fn
    std::string near_cpus;  // CPUs local to it
    int numa = -1;     // NUMA node local to it, -1 unknown
  };
  std::vector<Gpu> gpus;
  struct Worker {
    int id = 0;
    std::string name;     // StarPU's
    std::string type;     // CPU, CUDA
    int bindid = -1;      // the PU StarPU chose for it
    std::string runs_on;  // the worker thread's affinity, measured inside it
  };
  std::vector<Worker> workers;
};

// hwloc's view of this machine (no StarPU needed).
Topology machine_topology();
// Adds the workers of the StarPU session that is open now: runs one task
// on each to read its thread's CPU affinity.
void add_starpu_workers(Topology& t);

}  // namespace rrfp
