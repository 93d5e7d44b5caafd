#include "binding.h"

#include <map>

namespace hora::launcher {
namespace {

// The machine's cores and NUMA nodes cut down to the allowed CPUs.
struct AllowedMachine {
  std::vector<Core> cores;
  std::map<int, CpuList> nodes;  // NUMA node -> its allowed CPUs
};

AllowedMachine restrict_to(const MachineLayout& machine, const CpuList& allowed) {
  AllowedMachine result;
  for (const Core& core : machine.cores) {
    CpuList cpus = core.cpus.intersect(allowed);
    if (cpus.empty()) continue;
    result.nodes[core.numa_node] = result.nodes[core.numa_node].unite(cpus);
    result.cores.push_back({std::move(cpus), core.numa_node});
  }
  return result;
}

std::string core_range(std::size_t first, std::size_t last) {
  return first == last ? "core " + std::to_string(first)
                       : "cores " + std::to_string(first) + "-" + std::to_string(last);
}

std::vector<RankBinding> by_numa(const AllowedMachine& machine, int ranks) {
  std::vector<std::pair<int, CpuList>> nodes(machine.nodes.begin(), machine.nodes.end());
  std::vector<RankBinding> plan;
  for (int rank = 0; rank < ranks; ++rank) {
    const auto& [node, cpus] = nodes[static_cast<std::size_t>(rank) * nodes.size() / ranks];
    plan.push_back({cpus, "NUMA node " + std::to_string(node)});
  }
  return plan;
}

std::vector<RankBinding> by_core(const AllowedMachine& machine, int ranks) {
  const std::size_t cores = machine.cores.size();
  std::vector<RankBinding> plan;
  std::size_t next = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    // Equal shares, the remainder going one each to the first ranks.
    const std::size_t share = cores / ranks + (static_cast<std::size_t>(rank) < cores % ranks ? 1 : 0);
    RankBinding binding;
    for (std::size_t c = next; c < next + share; ++c) binding.cpus = binding.cpus.unite(machine.cores[c].cpus);
    // Cores are numbered among the allowed ones, in hwloc's order.
    binding.unit = core_range(next, next + share - 1);
    next += share;
    plan.push_back(std::move(binding));
  }
  return plan;
}

}  // namespace

std::optional<BindTo> parse_bind_to(const std::string& text) {
  if (text == "core") return BindTo::Core;
  if (text == "numa") return BindTo::Numa;
  if (text == "none") return BindTo::None;
  return std::nullopt;
}

const char* bind_to_name(BindTo bind_to) {
  switch (bind_to) {
    case BindTo::Core: return "core";
    case BindTo::Numa: return "numa";
    case BindTo::None: return "none";
  }
  return "?";
}

std::vector<RankBinding> plan_bindings(const MachineLayout& machine, const CpuList& allowed, int ranks,
                                       BindTo bind_to) {
  const AllowedMachine usable = restrict_to(machine, allowed);
  // Nothing known about the allowed CPUs (a layout that does not cover
  // them): binding could only guess, so ranks keep the launcher's CPUs.
  if (bind_to == BindTo::None || usable.cores.empty() || ranks < 1)
    return std::vector<RankBinding>(static_cast<std::size_t>(std::max(ranks, 0)), RankBinding{{}, "unbound"});
  if (bind_to == BindTo::Core && usable.cores.size() >= static_cast<std::size_t>(ranks))
    return by_core(usable, ranks);
  return by_numa(usable, ranks);
}

}  // namespace hora::launcher
