// How a rank waits for its peers: spinning on its own core, or giving the
// core up at once when ranks share cores.
//
// A waiting rank that spins on a core it has to itself costs nothing and
// answers within a cache-line transfer. A rank that spins on a core another
// rank needs (8 ranks on 2 cores) holds back the very rank it waits for,
// until the scheduler takes the core away at the end of its time slice:
// each ring step then costs milliseconds. So the choice is made from the
// CPUs each rank of this host may run on, gathered at init: a rank whose
// CPUs are wanted by more ranks than they number yields.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hora::core {

enum class WaitMode : std::uint8_t { Spin, Yield };
const char* waitModeName(WaitMode mode);  // "spin", "yield"

// The CPUs a thread may run on, as a fixed-size bit set that can travel in
// the init all-gather (CPUs 0..1023; Linux's default cpu_set_t).
struct CpuMask {
  std::array<std::uint64_t, 16> words{};

  static CpuMask ofThisThread();  // topology::currentCpus()
  static CpuMask ofCpus(const std::vector<int>& cpus);
  int count() const;
  bool intersects(const CpuMask& other) const;
};

// `sameHost` are the masks of every rank on this rank's host, `mine` among
// them. Spin when no more ranks can run on my CPUs than I have CPUs;
// otherwise Yield. `why` (optional) receives the counts, for the log.
WaitMode chooseWaitMode(const std::vector<CpuMask>& sameHost, const CpuMask& mine, std::string* why = nullptr);

// Whether some rank's CPUs are wanted by more ranks than they number (the
// rank would wait by yielding): `hostOf[r]` says which host rank r is on,
// `masks[r]` its CPUs. Every rank computes it from the same gathered values,
// so every rank gets the same answer: decisions that must be alike on all
// ranks (the shared-memory FIFO size, tuning.h) may rest on it.
bool ranksShareCpus(const std::vector<std::uint64_t>& hostOf, const std::vector<CpuMask>& masks);

// What the user asked for (HORA_WAIT, in Tuning): Auto means chooseWaitMode.
enum class WaitModeSetting : std::uint8_t { Auto, Spin, Yield };

}  // namespace hora::core
