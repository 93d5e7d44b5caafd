// The network devices a communicator's init looks for before ranks tell
// each other what they can use (topology::RankPlacement): the ofi device
// now (its provider chosen by ofi/ofi_device.h), the verbs one when it is
// installed. Each is opened once per process; later calls do nothing.
#pragma once

#include <string>

#include "topology/topology.h"

namespace hora::transport::rdma {

// `spansHosts`: some rank of the communicator is on another host;
// `interfaceName`: the network interface the bootstrap chose, which a
// device reached through IP (libfabric's tcp provider) should use too.
void prepareNetworkDevices(const topology::TransportPolicy& policy, bool spansHosts,
                           const std::string& interfaceName);

// What this host offers the network transports, as hora-topo shows it:
// whether each is usable here, and what was found or why not. Opens
// nothing for good (the ofi device found is closed again).
struct NetworkDeviceReport {
  bool ib = false;
  std::string ibDetail;
  bool ofi = false;
  std::string ofiDetail;
};
NetworkDeviceReport probeNetworkDevices(const topology::TransportPolicy& policy);

}  // namespace hora::transport::rdma
