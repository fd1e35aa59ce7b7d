// rrfp topo: the machine as the runtime sees it (runtime/topology.hpp).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "drivers/commands.hpp"
#include "graph/pipeline_spec.hpp"
#include "runtime/session.hpp"
#include "runtime/topology.hpp"
#include "sched/policy_registry.hpp"
#include "sim/json_file.hpp"

namespace rrfp::cli {

namespace {

nlohmann::json to_json(const Topology& t) {
  nlohmann::json j = {{"hwloc", t.hwloc_version}, {"packages", t.packages}, {"cores", t.cores}, {"pus", t.pus}};
  for (const auto& n : t.numa) j["numa"].push_back({{"index", n.index}, {"cpus", n.cpus}, {"bytes", n.bytes}});
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : t.gpus)
    j["gpus"].push_back({{"name", g.name}, {"pci", g.pci}, {"near_cpus", g.near_cpus}, {"numa", g.numa}});
  for (const auto& w : t.workers)
    j["workers"].push_back(
        {{"id", w.id}, {"name", w.name}, {"type", w.type}, {"bindid", w.bindid}, {"runs_on", w.runs_on}});
  return j;
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "topo", "Show cores, NUMA nodes, GPUs (PCI, NUMA locality) and where StarPU's workers really run");
  auto devices = std::make_shared<int>(2);
  auto json = std::make_shared<std::string>();
  cmd->add_option("--devices", *devices, "CPU workers to start (one per pipeline device)")->capture_default_str();
  cmd->add_option("--json", *json, "also write the topology as JSON");
  cmd->callback([devices, json] {
    Topology t = machine_topology();
    {
      StarpuSession s(resolve_policy(""), *devices, false);
      add_starpu_workers(t);
    }
    fmt::print("hwloc (API {}): {} package(s), {} cores, {} PUs\n", t.hwloc_version, t.packages, t.cores, t.pus);
    for (const auto& n : t.numa) fmt::print("  NUMA node {}: CPUs {}, {:.1f} GiB\n", n.index, n.cpus, n.bytes / 1073741824.0);
    if (t.gpus.empty()) fmt::print("  GPUs: none found\n");
    for (const auto& g : t.gpus)
      fmt::print("  GPU {} at PCI {}: near CPUs {}, NUMA node {}\n", g.name, g.pci, g.near_cpus,
                 g.numa >= 0 ? std::to_string(g.numa) : "any");
    fmt::print("StarPU workers ({}; bind with STARPU_WORKERS_NOBIND=0, STARPU_WORKERS_CPUID):\n",
               std::getenv("STARPU_WORKERS_NOBIND") && std::string(std::getenv("STARPU_WORKERS_NOBIND")) != "0"
                   ? "not bound: STARPU_WORKERS_NOBIND is set"
                   : "bound by StarPU");
    for (const auto& w : t.workers)
      fmt::print("  worker {} {} ({}): StarPU's PU {}, thread runs on CPUs {}\n", w.id, w.name, w.type, w.bindid,
                 w.runs_on);
    if (!json->empty()) write_json_file(*json, to_json(t));
  });
}

}  // namespace rrfp::cli
