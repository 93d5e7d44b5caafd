#include "binding.h"

#include <map>

namespace hora::launcher {
namespace {

// A core some of whose CPUs are allowed, with its number on the whole
// machine (hwloc's order), the number a report names it by: under
// `taskset -c 1` a rank runs on core 1, not on the first allowed core.
struct AllowedCore {
  CpuList cpus;  // its allowed CPUs only
  int number = 0;
};

// The machine's cores and NUMA nodes cut down to the allowed CPUs.
struct AllowedMachine {
  std::vector<AllowedCore> cores;
  std::map<int, CpuList> nodes;  // NUMA node -> its allowed CPUs
};

AllowedMachine restrict_to(const MachineLayout& machine, const CpuList& allowed) {
  AllowedMachine result;
  for (std::size_t number = 0; number < machine.cores.size(); ++number) {
    const Core& core = machine.cores[number];
    CpuList cpus = core.cpus.intersect(allowed);
    if (cpus.empty()) continue;
    result.nodes[core.numa_node] = result.nodes[core.numa_node].unite(cpus);
    result.cores.push_back({std::move(cpus), static_cast<int>(number)});
  }
  return result;
}

// "core 3", or "cores 0-1,4" in the list notation when a share has several.
std::string cores_text(const std::vector<int>& numbers) {
  return (numbers.size() == 1 ? "core " : "cores ") + CpuList(numbers).to_string();
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
    std::vector<int> numbers;
    for (std::size_t c = next; c < next + share; ++c) {
      binding.cpus = binding.cpus.unite(machine.cores[c].cpus);
      numbers.push_back(machine.cores[c].number);
    }
    binding.unit = cores_text(numbers);
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
