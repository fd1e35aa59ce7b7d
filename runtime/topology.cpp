#include "runtime/topology.hpp"

#include <hwloc.h>
#include <sched.h>
#include <starpu.h>

#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace rrfp {

namespace {

std::string cpu_list(hwloc_const_bitmap_t set) {
  if (!set) return "";
  char* s = nullptr;
  hwloc_bitmap_list_asprintf(&s, set);
  std::string out = s ? s : "";
  free(s);
  return out;
}

bool is_gpu(hwloc_obj_t pci) {
  const unsigned cls = pci->attr->pcidev.class_id;
  return cls == 0x0300 || cls == 0x0302;  // VGA and 3D controllers (NVIDIA data-center GPUs are 3D)
}

// CPU affinity of the calling thread.
std::string my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) hwloc_bitmap_set(b, static_cast<unsigned>(c));
  std::string out = cpu_list(b);
  hwloc_bitmap_free(b);
  return out;
}

}  // namespace

Topology machine_topology() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) throw std::runtime_error("hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> guard(topo, hwloc_topology_destroy);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);  // GPUs and their OS devices
  if (hwloc_topology_load(topo) != 0) throw std::runtime_error("hwloc_topology_load failed");
  Topology t;
  const unsigned v = hwloc_get_api_version();  // the library loaded, not the header
  t.hwloc_version = fmt::format("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff);
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));)
    t.numa.push_back({static_cast<int>(n->os_index), cpu_list(n->cpuset), n->attr->numanode.local_memory});
  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_pcidev(topo, p));) {
    if (!is_gpu(p)) continue;
    Topology::Gpu g;
    const auto& a = p->attr->pcidev;
    g.pci = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
    g.name = fmt::format("PCI {:04x}:{:04x}", a.vendor_id, a.device_id);
    for (hwloc_obj_t c = p->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && c->name) {
        g.name = c->name;
        break;
      }
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, p);
    if (parent) {
      g.near_cpus = cpu_list(parent->cpuset);
      if (parent->nodeset && hwloc_bitmap_weight(parent->nodeset) == 1) g.numa = hwloc_bitmap_first(parent->nodeset);
    }
    t.gpus.push_back(std::move(g));
  }
  return t;
}

void add_starpu_workers(Topology& t) {
  const unsigned n = starpu_worker_get_count();
  std::vector<std::string> runs_on(n);
  starpu_execute_on_each_worker(
      [](void* arg) {
        auto& v = *static_cast<std::vector<std::string>*>(arg);
        v[static_cast<size_t>(starpu_worker_get_id())] = my_cpus();
      },
      &runs_on, STARPU_CPU | STARPU_CUDA);
  for (unsigned w = 0; w < n; ++w) {
    Topology::Worker k;
    k.id = static_cast<int>(w);
    char name[64] = {0};
    starpu_worker_get_name(static_cast<int>(w), name, sizeof name);
    k.name = name;
    k.type = starpu_worker_get_type(static_cast<int>(w)) == STARPU_CUDA_WORKER ? "CUDA" : "CPU";
    k.bindid = starpu_worker_get_bindid(static_cast<int>(w));
    k.runs_on = runs_on[w];
    t.workers.push_back(std::move(k));
  }
}

}  // namespace rrfp
