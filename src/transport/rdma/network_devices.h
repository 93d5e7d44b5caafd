// The network devices a communicator's init looks for before ranks tell
// each other what they can use (topology::RankPlacement): the ofi device
// now (its provider chosen by ofi/ofi_device.h), the verbs one when it is
// installed. Each is opened once per process; later calls do nothing.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.h"

namespace hora::transport::rdma {

// What a communicator's rank tells the device search about itself.
struct RankNetworkView {
  bool spansHosts = false;    // some rank of the communicator is on another host
  std::string interfaceName;  // the bootstrap's, which a device reached through
                              // IP (libfabric's tcp provider) should use too
  std::vector<std::string> nicsNearest;  // RDMA NICs nearest the rank first
                                         // (topology::rdmaNicsNearest)
  std::vector<std::string> railsNearest;  // those as near as the first
                                          // (topology::rdmaRailsNearest)
};
void prepareNetworkDevices(const topology::TransportPolicy& policy, const RankNetworkView& rank);

// What this host offers the network transports, as hora-topo shows it:
// whether each is usable here, and what was found or why not. Opens
// nothing for good (the ofi device found is closed again).
struct NetworkDeviceReport {
  bool ib = false;
  std::string ibDetail;
  bool ofi = false;
  std::string ofiDetail;
  std::string gpuDirectDetail;  // rdma/gpu_direct.h: describeGpuDirect
};
NetworkDeviceReport probeNetworkDevices(const topology::TransportPolicy& policy);

}  // namespace hora::transport::rdma
