// Whether two RDMA ports can reach each other, judged from what each side
// can tell the other (its link layer and GID 0) before a queue pair is made.
//
// InfiniBand: a LID routes only within a subnet, and GID 0's first 8 bytes
// are the subnet prefix the subnet manager gave the port, so two ports with
// different prefixes are on different fabrics (or need an IB router, which
// hora does not set up). RoCE: what would decide it is IP routing between
// the two interfaces, which a GID does not tell; two Ethernet ports are
// taken as reachable and connect() reports it if they are not. An
// InfiniBand port never reaches an Ethernet one.
#pragma once

#include "topology/topology.h"

#include "transport/rdma/verbs/gid.h"

namespace hora::transport::rdma::verbs {

struct PortIdentity {
  LinkLayer linkLayer = LinkLayer::InfiniBand;
  Gid gid0{};  // GID 0 of the port
};

bool shareFabric(const PortIdentity& a, const PortIdentity& b);

// The subnet prefix of an InfiniBand port: GID 0's first 8 bytes.
std::uint64_t subnetPrefix(const Gid& gid0);

// The link layer as the topology's placements carry it.
topology::RankPlacement::LinkLayer placementLayer(LinkLayer layer);

}  // namespace hora::transport::rdma::verbs
