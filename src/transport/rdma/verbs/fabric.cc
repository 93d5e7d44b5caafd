#include "transport/rdma/verbs/fabric.h"

namespace hora::transport::rdma::verbs {

std::uint64_t subnetPrefix(const Gid& gid0) {
  std::uint64_t prefix = 0;
  for (std::size_t i = 0; i < 8; ++i) prefix = prefix << 8 | gid0[i];
  return prefix;
}

topology::RankPlacement::LinkLayer placementLayer(LinkLayer layer) {
  return layer == LinkLayer::Ethernet ? topology::RankPlacement::LinkLayer::Ethernet
                                      : topology::RankPlacement::LinkLayer::InfiniBand;
}

bool shareFabric(const PortIdentity& a, const PortIdentity& b) {
  return topology::rdmaPortsMeet(placementLayer(a.linkLayer), subnetPrefix(a.gid0), placementLayer(b.linkLayer),
                                 subnetPrefix(b.gid0));
}

}  // namespace hora::transport::rdma::verbs
