// What hora-topo prints: the machine, and for a rank layout the transports
// and the ring, as text or JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "options.h"
#include "topology/topology.h"
#include "transport/rdma/network_devices.h"

namespace hora::topo_tool {

// Ranks placed on hosts that all have the machine's shape.
struct RankView {
  std::vector<topology::RankPlacement> placements;  // indexed by rank
  std::vector<std::string> hostOf;                  // indexed by rank
  std::vector<std::vector<topology::TransportChoice>> transports;  // [a][b], a != b
  std::vector<int> ring;
};

using transport::rdma::NetworkDeviceReport;

// A host's k-th rank (in rank order) drives the machine's GPU k (mod the GPU
// count; none when the machine has no GPU). `network`: what this host's
// network devices offer (every simulated host has the same; it decides
// which ranks have ib and ofi, as in a communicator), or null when the
// machine is another one (--topo).
RankView simulateRanks(const topology::System& system, const std::vector<SimulatedRank>& layout,
                       const topology::TransportPolicy& policy, const NetworkDeviceReport* network);

void printText(std::ostream& out, const topology::System& system, const NetworkDeviceReport* network,
               const RankView* ranks, bool reasons);
void printJson(std::ostream& out, const topology::System& system, const NetworkDeviceReport* network,
               const RankView* ranks);

}  // namespace hora::topo_tool
