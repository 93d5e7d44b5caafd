// Ring order.
//
// Across hosts: each host's ranks stay together and hosts follow the order of
// their lowest rank, so the ring leaves every host once and enters it once.
//
// Inside a host: the GPUs form the cycle that is best edge by edge, where a
// cycle is better when it has fewer edges of the worst path class (SYS, then
// NODE, PHB, PXB, PIX; NVL costs nothing), then when its slowest NVLink hop
// is faster (a ring moves at the pace of its slowest hop: on a DGX-1 with
// V100s, a cycle over the GPU pairs joined by two links beats one with a
// single-link hop), and among equals fewer bad PCIe classes (the PCIe path,
// ignoring NVLink: on an NVSwitch machine every cycle is all NVL, and PCIe
// locality decides). Written from the host's
// lowest rank, the worst hop is the one closing the cycle. Up to 16 GPUs per
// host the search is exact (dynamic programming over subsets); ties go to the
// cycle whose rank sequence is smallest, so the answer is deterministic and
// independent of the order placements arrive in. Beyond 16 GPUs, greedy
// nearest neighbour. When the ring continues to another host, the cycle is
// opened at its worst edge.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

#include "base/error.h"
#include "topology/bus_id.h"
#include "topology/topology.h"

namespace hora::topology {

namespace {

constexpr int kExactSearchLimit = 16;  // 2^15 * 16 states of 16 bytes: 8 MB, tens of ms

// Ranks driving one GPU (in rank order).
struct GpuGroup {
  std::string busId;
  int device = -1;  // index in the System; -1 when unknown
  std::vector<int> ranks;
};

// An edge's cost as packed counters, 6 bits each, worst class in the
// highest bits: sums of up to 63 edges then compare like the lexicographic
// order of (SYS edges, NODE edges, PHB, PXB, PIX, NVLink edges slower than
// the bandwidth the ring aims at, then the counts of the PCIe-only classes).
// Other NVL and LOC edges count nothing.
int classRank(PathClass cls) {
  switch (cls) {
    case PathClass::Net:
    case PathClass::Sys: return 4;
    case PathClass::Node: return 3;
    case PathClass::Phb: return 2;
    case PathClass::Pxb: return 1;
    case PathClass::Pix: return 0;
    default: return -1;
  }
}

constexpr int kSlowNvLinkShift = 24;  // bits 24..29
constexpr int kClassShift = 30;       // bits 30..59

std::uint64_t edgeCost(const System& system, int a, int b, double nvlinkTarget) {
  std::uint64_t cost = 0;
  const Path& path = system.path(a, b);
  if (int r = classRank(path.cls); r >= 0) cost += 1ull << (kClassShift + 6 * r);
  if (path.cls == PathClass::Nvl && path.bandwidthGBps < nvlinkTarget) cost += 1ull << kSlowNvLinkShift;
  // The PCIe tie-break has no PIX field: it only separates what PIX does not.
  if (int r = classRank(system.pciePathBetween(a, b)); r >= 1) cost += 1ull << (6 * (r - 1));  // bits 0..23
  return cost;
}

using CostMatrix = std::vector<std::vector<std::uint64_t>>;

CostMatrix costMatrix(const System& system, const std::vector<int>& devices, double nvlinkTarget) {
  CostMatrix cost(devices.size(), std::vector<std::uint64_t>(devices.size(), 0));
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = 0; j < devices.size(); ++j)
      if (i != j) cost[i][j] = edgeCost(system, devices[i], devices[j], nvlinkTarget);
  return cost;
}

std::uint64_t cycleCost(const std::vector<int>& cycle, const CostMatrix& cost) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < cycle.size(); ++i) total += cost[cycle[i]][cycle[(i + 1) % cycle.size()]];
  return total;
}

// What the search minimises, in order: the cycle's cost, then the cost of
// the cycle without its closing edge (so the worst hop is the one from the
// last rank back to the first, and the sequence reads as the best path).
// Pairs add up field by field and compare lexicographically, so the dynamic
// programme stays exact.
struct CycleCost {
  std::uint64_t cycle = 0;
  std::uint64_t path = 0;
  friend bool operator<(const CycleCost& a, const CycleCost& b) {
    return a.cycle != b.cycle ? a.cycle < b.cycle : a.path < b.path;
  }
  friend bool operator==(const CycleCost& a, const CycleCost& b) = default;
};

// Exact best cycle through nodes 0..n-1 starting at 0, smallest sequence on ties.
std::vector<int> exactCycle(const CostMatrix& cost) {
  const int n = static_cast<int>(cost.size());
  const std::uint32_t full = (1u << n) - 1;
  // rest[mask][v]: cheapest way to visit the nodes outside mask from v and
  // close at 0. Every mask holds node 0, so index by mask >> 1.
  std::vector<CycleCost> rest(static_cast<std::size_t>(1u << (n - 1)) * static_cast<std::size_t>(n));
  auto at = [&](std::uint32_t mask, int v) -> CycleCost& {
    return rest[static_cast<std::size_t>(mask >> 1) * static_cast<std::size_t>(n) + static_cast<std::size_t>(v)];
  };
  auto step = [&](int v, int u, std::uint32_t mask) {
    const CycleCost& after = at(mask | (1u << u), u);
    return CycleCost{cost[v][u] + after.cycle, cost[v][u] + after.path};
  };
  for (int v = 0; v < n; ++v) at(full, v) = CycleCost{cost[v][0], 0};
  for (std::uint32_t mask = full - 1; mask >= 1; --mask) {
    if (!(mask & 1u)) continue;
    for (int v = 0; v < n; ++v) {
      if (!(mask & (1u << v))) continue;
      bool first = true;
      CycleCost best;
      for (int u = 1; u < n; ++u) {
        if (mask & (1u << u)) continue;
        CycleCost candidate = step(v, u, mask);
        if (first || candidate < best) best = candidate;
        first = false;
      }
      at(mask, v) = best;
    }
  }
  std::vector<int> cycle{0};
  std::uint32_t mask = 1;
  int v = 0;
  while (mask != full) {
    for (int u = 1; u < n; ++u) {
      if (mask & (1u << u)) continue;
      if (step(v, u, mask) == at(mask, v)) {
        cycle.push_back(u);
        mask |= 1u << u;
        v = u;
        break;
      }
    }
  }
  return cycle;
}

std::vector<int> greedyCycle(const CostMatrix& cost) {
  const int n = static_cast<int>(cost.size());
  std::vector<int> cycle{0};
  std::vector<bool> used(static_cast<std::size_t>(n), false);
  used[0] = true;
  for (int step = 1; step < n; ++step) {
    int from = cycle.back(), next = -1;
    for (int u = 0; u < n; ++u)
      if (!used[u] && (next < 0 || cost[from][u] < cost[from][next])) next = u;
    used[static_cast<std::size_t>(next)] = true;
    cycle.push_back(next);
  }
  return cycle;
}

// The NVLink bandwidths between the devices, each once, slowest first.
std::vector<double> nvlinkBandwidths(const System& system, const std::vector<int>& devices) {
  std::set<double> found;
  for (int a : devices)
    for (int b : devices)
      if (a != b && system.pathBetween(a, b) == PathClass::Nvl) found.insert(system.path(a, b).bandwidthGBps);
  return {found.begin(), found.end()};
}

// The best cycle by the cost above, exact up to kExactSearchLimit devices:
// the fastest NVLink bandwidth every NVLink hop can reach without more hops
// of a worse class is found by bisection over the bandwidths present (each
// step an exact search, so a handful of them even with many link counts),
// then the best cycle at that bandwidth. Greedy beyond the limit, where
// bandwidth is not weighed.
struct BestCycle {
  std::vector<int> order;
  CostMatrix cost;
};
BestCycle bestCycle(const System& system, const std::vector<int>& devices) {
  const std::vector<double> bandwidths = nvlinkBandwidths(system, devices);
  const double slowest = bandwidths.empty() ? 0 : bandwidths.front();
  BestCycle best{{}, costMatrix(system, devices, slowest)};
  if (devices.size() > static_cast<std::size_t>(kExactSearchLimit)) {
    best.order = greedyCycle(best.cost);
    return best;
  }
  best.order = exactCycle(best.cost);
  // What no NVLink target may worsen: the counts of each path class.
  const std::uint64_t classes = cycleCost(best.order, best.cost) >> kSlowNvLinkShift;
  std::size_t reached = 0, unreachable = bandwidths.size();
  while (unreachable - reached > 1) {
    const std::size_t middle = (reached + unreachable) / 2;
    BestCycle candidate{{}, costMatrix(system, devices, bandwidths[middle])};
    candidate.order = exactCycle(candidate.cost);
    if (cycleCost(candidate.order, candidate.cost) >> kSlowNvLinkShift == classes) {
      best = std::move(candidate);
      reached = middle;
    } else {
      unreachable = middle;
    }
  }
  return best;
}

// Rotates a cycle so that its worst edge is the one from last back to first
// (kept where it is when that edge is among the worst).
void openAtWorstEdge(std::vector<int>& cycle, const CostMatrix& cost) {
  const std::size_t n = cycle.size();
  if (n < 3) return;
  auto edge = [&](std::size_t i) { return cost[cycle[i]][cycle[(i + 1) % n]]; };
  std::uint64_t worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, edge(i));
  if (edge(n - 1) == worst) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (edge(i) == worst) {
      std::rotate(cycle.begin(), cycle.begin() + static_cast<long>(i + 1), cycle.end());
      return;
    }
  }
}

// The ranks of one host in ring order.
std::vector<int> hostOrder(const std::vector<const RankPlacement*>& ranks, const System* system,
                           bool ringContinues) {
  std::map<std::string, GpuGroup> byBus;
  std::vector<int> withoutGpu;
  for (const RankPlacement* p : ranks) {
    if (p->gpuBusId.empty()) {
      withoutGpu.push_back(p->rank);
      continue;
    }
    std::string bus = canonicalBusId(p->gpuBusId).value_or(p->gpuBusId);
    GpuGroup& group = byBus[bus];
    group.busId = bus;
    group.ranks.push_back(p->rank);
  }
  std::vector<GpuGroup> known, unknown;
  for (auto& [bus, group] : byBus) {
    std::sort(group.ranks.begin(), group.ranks.end());
    if (system != nullptr)
      if (auto device = system->findGpu(bus)) group.device = *device;
    (group.device >= 0 ? known : unknown).push_back(std::move(group));
  }
  // Node 0 of the search is the GPU of the host's lowest rank.
  std::sort(known.begin(), known.end(),
            [](const GpuGroup& a, const GpuGroup& b) { return a.ranks.front() < b.ranks.front(); });

  std::vector<int> order(known.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (known.size() >= 3) {
    std::vector<int> devices;
    for (const GpuGroup& group : known) devices.push_back(group.device);
    BestCycle best = bestCycle(*system, devices);
    order = std::move(best.order);
    if (ringContinues) openAtWorstEdge(order, best.cost);
  }

  std::vector<int> result;
  for (int index : order)
    for (int rank : known[static_cast<std::size_t>(index)].ranks) result.push_back(rank);
  for (const GpuGroup& group : unknown)  // by bus id (the map's order)
    for (int rank : group.ranks) result.push_back(rank);
  std::sort(withoutGpu.begin(), withoutGpu.end());
  result.insert(result.end(), withoutGpu.begin(), withoutGpu.end());
  return result;
}

}  // namespace

std::vector<int> ringOrder(const std::vector<RankPlacement>& ranks, const System* system) {
  if (ranks.empty()) return {};
  std::set<int> seen;
  for (const auto& p : ranks)
    HORA_CHECK_ARG(seen.insert(p.rank).second, "ringOrder: rank ", p.rank, " is placed twice");

  // Use the System only where every rank is certain to use the same one.
  bool oneHost = std::all_of(ranks.begin(), ranks.end(),
                             [&](const RankPlacement& p) { return p.hostHash == ranks.front().hostHash; });
  bool anyFingerprint = std::any_of(ranks.begin(), ranks.end(),
                                    [](const RankPlacement& p) { return p.topologyFingerprint != 0; });
  bool sameShape = system != nullptr &&
                   std::all_of(ranks.begin(), ranks.end(), [&](const RankPlacement& p) {
                     return p.topologyFingerprint == system->fingerprint();
                   });
  const System* usable = (anyFingerprint ? sameShape : oneHost) ? system : nullptr;

  // Hosts in the order of their lowest rank.
  std::map<std::uint64_t, std::vector<const RankPlacement*>> byHost;
  for (const auto& p : ranks) byHost[p.hostHash].push_back(&p);
  std::vector<std::vector<const RankPlacement*>> hosts;
  for (auto& [hash, members] : byHost) hosts.push_back(std::move(members));
  auto lowest = [](const std::vector<const RankPlacement*>& members) {
    int low = std::numeric_limits<int>::max();
    for (const RankPlacement* p : members) low = std::min(low, p->rank);
    return low;
  };
  std::sort(hosts.begin(), hosts.end(), [&](const auto& a, const auto& b) { return lowest(a) < lowest(b); });

  std::vector<int> ring;
  for (const auto& members : hosts) {
    auto part = hostOrder(members, usable, hosts.size() > 1);
    ring.insert(ring.end(), part.begin(), part.end());
  }
  std::rotate(ring.begin(), std::min_element(ring.begin(), ring.end()), ring.end());
  return ring;
}

}  // namespace hora::topology
