// The network devices a communicator's init looks for before ranks tell
// each other what they can use (topology::RankPlacement): the ofi device
// now (its provider chosen by ofi/ofi_device.h), the verbs one when it is
// installed. Each is opened once per process; later calls do nothing.
#pragma once

#include "topology/topology.h"

namespace hora::transport::rdma {

// `spansHosts`: some rank of the communicator is on another host.
void prepareNetworkDevices(const topology::TransportPolicy& policy, bool spansHosts);

}  // namespace hora::transport::rdma
