#include "machine_layout.h"

#include <hwloc.h>

#include <memory>
#include <stdexcept>

namespace hora::launcher {
namespace {

CpuList cpus_of(hwloc_const_bitmap_t set) {
  std::vector<int> cpus;
  int cpu;
  hwloc_bitmap_foreach_begin(cpu, set) cpus.push_back(cpu);
  hwloc_bitmap_foreach_end();
  return CpuList(std::move(cpus));
}

}  // namespace

MachineLayout discover_machine_layout() {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) throw std::runtime_error("hwloc cannot start");
  std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)> owner(topology, hwloc_topology_destroy);
  if (hwloc_topology_load(topology) != 0) throw std::runtime_error("hwloc cannot describe this machine");

  MachineLayout layout;
  const int cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  for (int i = 0; i < cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, i);
    Core entry{cpus_of(core->cpuset), 0};
    // The NUMA node whose CPUs include this core (a machine without NUMA
    // has one node, 0).
    hwloc_obj_t node = nullptr;
    while ((node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr) {
      if (hwloc_bitmap_isincluded(core->cpuset, node->cpuset)) {
        entry.numa_node = static_cast<int>(node->os_index);
        break;
      }
    }
    layout.cores.push_back(std::move(entry));
  }
  // hwloc without core information (some virtual machines): one core per
  // logical CPU.
  if (layout.cores.empty()) {
    const CpuList all = cpus_of(hwloc_topology_get_topology_cpuset(topology));
    for (int cpu : all.cpus()) layout.cores.push_back({CpuList({cpu}), 0});
  }
  return layout;
}

}  // namespace hora::launcher
