// The order in which a rank should prefer the machine's RDMA NICs, and its
// rails: the ib transport opens the first of them that it may use
// (NCCL_IB_HCA, ACTIVE) and every other usable one as near, so each rank's
// traffic leaves through the NICs nearest its data.
#include <algorithm>
#include <tuple>

#include "topology/topology.h"

namespace hora::topology {

namespace {
// The RDMA NICs in preference order, each with its distance from the rank's
// data: for a GPU, the NIC the topology gives it first (it spreads GPUs that
// tie for the same NICs over them), then by path class, then bandwidth;
// without one, NICs on a NUMA node holding the rank's CPUs first.
struct RankedNic {
  int device;
  std::tuple<int, double> distance;  // what rails must share
};

std::vector<RankedNic> rankNics(const System& system, std::optional<int> gpu, const std::vector<int>& cpus) {
  auto onOurNode = [&](int nic) {
    const std::vector<int> near = system.cpusNear(nic);
    return std::any_of(cpus.begin(), cpus.end(),
                       [&](int cpu) { return std::find(near.begin(), near.end(), cpu) != near.end(); });
  };
  std::vector<RankedNic> nics;
  for (int nic : system.devicesOfKind(DeviceKind::Nic)) {
    if (!system.devices()[static_cast<std::size_t>(nic)].rdma) continue;
    if (gpu) {
      const Path& path = system.path(*gpu, nic);
      nics.push_back({nic, {static_cast<int>(path.cls), -path.bandwidthGBps}});
    } else {
      nics.push_back({nic, {onOurNode(nic) ? 0 : 1, 0.0}});
    }
  }
  const std::optional<int> assigned = gpu ? system.nearestNic(*gpu) : std::nullopt;
  std::stable_sort(nics.begin(), nics.end(), [&](const RankedNic& a, const RankedNic& b) {
    return std::make_tuple(assigned != a.device, a.distance) < std::make_tuple(assigned != b.device, b.distance);
  });
  return nics;
}

std::string nameOf(const System& system, int device) { return system.devices()[static_cast<std::size_t>(device)].name; }
}  // namespace

std::vector<std::string> rdmaNicsNearest(const System& system, std::optional<int> gpu, const std::vector<int>& cpus) {
  std::vector<std::string> names;
  for (const RankedNic& nic : rankNics(system, gpu, cpus)) names.push_back(nameOf(system, nic.device));
  return names;
}

std::vector<std::string> rdmaRailsNearest(const System& system, std::optional<int> gpu, const std::vector<int>& cpus) {
  const std::vector<RankedNic> ranked = rankNics(system, gpu, cpus);
  std::vector<std::string> names;
  for (const RankedNic& nic : ranked)
    if (nic.distance == ranked.front().distance) names.push_back(nameOf(system, nic.device));
  return names;
}

}  // namespace hora::topology
