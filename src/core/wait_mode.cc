#include "core/wait_mode.h"

#include <bit>
#include <map>

#include "base/error.h"
#include "topology/cpu_affinity.h"

namespace hora::core {

const char* waitModeName(WaitMode mode) { return mode == WaitMode::Spin ? "spin" : "yield"; }

CpuMask CpuMask::ofThisThread() { return ofCpus(topology::currentCpus()); }

CpuMask CpuMask::ofCpus(const std::vector<int>& cpus) {
  CpuMask mask;
  for (int cpu : cpus)
    if (cpu >= 0 && cpu < 64 * static_cast<int>(mask.words.size()))
      mask.words[cpu / 64] |= std::uint64_t{1} << (cpu % 64);
  return mask;
}

int CpuMask::count() const {
  int n = 0;
  for (auto word : words) n += std::popcount(word);
  return n;
}

bool CpuMask::intersects(const CpuMask& other) const {
  for (std::size_t i = 0; i < words.size(); ++i)
    if ((words[i] & other.words[i]) != 0) return true;
  return false;
}

WaitMode chooseWaitMode(const std::vector<CpuMask>& sameHost, const CpuMask& mine, std::string* why) {
  int contenders = 0;  // ranks (this one included) that may run on my CPUs
  for (const CpuMask& mask : sameHost)
    if (mask.intersects(mine)) ++contenders;
  const int cpus = mine.count();
  const WaitMode mode = cpus == 0 || contenders <= cpus ? WaitMode::Spin : WaitMode::Yield;
  if (why != nullptr)
    *why = strCat(contenders, " rank(s) of this host may run on this rank's ", cpus, " CPU(s)");
  return mode;
}

bool ranksShareCpus(const std::vector<std::uint64_t>& hostOf, const std::vector<CpuMask>& masks) {
  HORA_ENFORCE(hostOf.size() == masks.size(), hostOf.size(), " hosts for ", masks.size(), " masks");
  // Grouped by host first: a job of thousands of ranks compares each rank
  // with the few of its own host only.
  std::map<std::uint64_t, std::vector<CpuMask>> byHost;
  for (std::size_t r = 0; r < masks.size(); ++r) byHost[hostOf[r]].push_back(masks[r]);
  for (const auto& [host, sameHost] : byHost)
    for (const CpuMask& mine : sameHost)
      if (chooseWaitMode(sameHost, mine) == WaitMode::Yield) return true;
  return false;
}

}  // namespace hora::core
