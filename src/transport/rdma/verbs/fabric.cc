#include "transport/rdma/verbs/fabric.h"

#include <algorithm>

namespace hora::transport::rdma::verbs {

bool shareFabric(const PortIdentity& a, const PortIdentity& b) {
  if (a.linkLayer != b.linkLayer) return false;
  if (a.linkLayer == LinkLayer::Ethernet) return true;
  return std::equal(a.gid0.begin(), a.gid0.begin() + 8, b.gid0.begin());
}

}  // namespace hora::transport::rdma::verbs
