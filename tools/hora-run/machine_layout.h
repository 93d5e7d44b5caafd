// The cores of this machine and the NUMA node each belongs to: what
// hora-run needs to give each rank cores of its own.
#pragma once

#include <vector>

#include "cpu_list.h"

namespace hora::launcher {

struct Core {
  CpuList cpus;       // its hardware threads (logical CPUs)
  int numa_node = 0;  // OS index of the NUMA node holding it
};

struct MachineLayout {
  std::vector<Core> cores;  // in the order hwloc lists them (by package, then core)
};

// This machine, through hwloc. Throws std::runtime_error when hwloc cannot
// describe it.
MachineLayout discover_machine_layout();

}  // namespace hora::launcher
