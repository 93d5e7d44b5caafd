// Which CPUs each rank of this node runs on (--bind-to). A rank that
// shares its core with another spends its time taking turns with it, and
// one that the scheduler moves loses its caches; so, as mpirun does,
// hora-run gives each rank cores of its own by default.
//
// The plan is a pure function of the machine, the CPUs the launcher itself
// may use and the number of ranks, so it is tested with made-up machines.
// It never widens what the launcher was given (taskset, a Slurm or cgroup
// cpuset): every rank's CPUs are a subset of the launcher's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cpu_list.h"
#include "machine_layout.h"

namespace hora::launcher {

enum class BindTo { Core, Numa, None };

// "core", "numa", "none"; nullopt for anything else.
std::optional<BindTo> parse_bind_to(const std::string& text);
const char* bind_to_name(BindTo bind_to);

struct RankBinding {
  CpuList cpus;                  // empty: leave the rank's affinity alone
  std::string unit;              // what it is bound to: "cores 0-1", "NUMA node 0"
                                 // (cores by their number on the machine)
};

// One binding per local rank.
//   core: the allowed cores (those with at least one allowed CPU) are cut
//         into `ranks` contiguous equal shares (the first ranks get one
//         more when they do not divide), so every rank has cores of its
//         own and neighbouring ranks sit on neighbouring cores. With more
//         ranks than cores, ranks cannot each have a core: they are spread
//         over the NUMA nodes instead (as numa).
//   numa: rank i goes to allowed NUMA node floor(i * nodes / ranks), all of
//         that node's allowed CPUs.
//   none: every rank keeps the launcher's CPUs.
std::vector<RankBinding> plan_bindings(const MachineLayout& machine, const CpuList& allowed, int ranks,
                                       BindTo bind_to);

}  // namespace hora::launcher
