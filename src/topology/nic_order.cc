// The order in which a rank should prefer the machine's RDMA NICs: the ib
// transport opens the first of them that it may use (NCCL_IB_HCA, ACTIVE),
// so each rank's traffic leaves through the NIC nearest its data.
#include <algorithm>
#include <tuple>

#include "topology/topology.h"

namespace hora::topology {

std::vector<std::string> rdmaNicsNearest(const System& system, std::optional<int> gpu, const std::vector<int>& cpus) {
  std::vector<int> nics;
  for (int nic : system.devicesOfKind(DeviceKind::Nic))
    if (system.devices()[static_cast<std::size_t>(nic)].rdma) nics.push_back(nic);
  // For a GPU: the NIC the topology gives it first (it spreads GPUs that tie
  // for the same NICs over them), then by path class, then bandwidth.
  // Without one: NICs on a NUMA node holding the rank's CPUs first.
  auto onOurNode = [&](int nic) {
    const std::vector<int> near = system.cpusNear(nic);
    return std::any_of(cpus.begin(), cpus.end(),
                       [&](int cpu) { return std::find(near.begin(), near.end(), cpu) != near.end(); });
  };
  const std::optional<int> assigned = gpu ? system.nearestNic(*gpu) : std::nullopt;
  auto key = [&](int nic) {
    if (gpu) {
      const Path& path = system.path(*gpu, nic);
      return std::make_tuple(assigned != nic, static_cast<int>(path.cls), -path.bandwidthGBps);
    }
    return std::make_tuple(false, onOurNode(nic) ? 0 : 1, 0.0);
  };
  std::stable_sort(nics.begin(), nics.end(), [&](int a, int b) { return key(a) < key(b); });
  std::vector<std::string> names;
  for (int nic : nics) names.push_back(system.devices()[static_cast<std::size_t>(nic)].name);
  return names;
}

}  // namespace hora::topology
