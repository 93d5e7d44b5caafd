// What one end of a reliable connection tells the other (over the
// connection's TCP lifeline) so that the other can aim its queue pair at
// it: QueuePair::address() and connect().
//
// Fixed layout, little-endian, a format byte first so that two hora
// versions that disagree fail with a message rather than a wrong queue
// pair number:
//   format(1) linkLayer(1) mtu(1) lid(2) qpNumber(4) psn(4) gid(16)
#pragma once

#include <cstdint>
#include <vector>

#include "transport/rdma/verbs/gid.h"

namespace hora::transport::rdma::verbs {

struct QpAddress {
  LinkLayer linkLayer = LinkLayer::InfiniBand;
  std::uint8_t mtu = 0;       // the port's active MTU, an ibv_mtu value (1: 256 ... 5: 4096)
  std::uint16_t lid = 0;      // InfiniBand local identifier (0 on RoCE)
  std::uint32_t qpNumber = 0;
  std::uint32_t psn = 0;      // first packet sequence number this end sends (24 bits)
  Gid gid{};                  // the GID this end sends from (InfiniBand: GID 0)
};

std::vector<char> serialize(const QpAddress& address);
// The peer's bytes; anything malformed is a Remote error naming `peer`.
QpAddress parseQpAddress(const std::vector<char>& bytes, const char* peer = "the peer");

}  // namespace hora::transport::rdma::verbs
