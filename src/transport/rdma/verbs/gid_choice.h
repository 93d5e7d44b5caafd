// Which GID a port's queue pairs send from (ibv_qp_attr::ah_attr.grh.sgid_index).
//
// InfiniBand: GID 0, the port's own; the LID routes within the subnet and
// the GID is only needed across subnets. NCCL_IB_GID_INDEX does not apply.
//
// RoCE (Ethernet link layer): the GID is the source address of every
// packet, and the table holds one entry per IP address per RoCE version, so
// the choice decides whether traffic is routable at all. Set
// NCCL_IB_GID_INDEX (ib_settings.h) to force one; an index the port does not
// have is an error, not a silent fallback. Otherwise, like NCCL, the best
// entry by these rules, each deciding only among entries equal on the ones
// before it:
//   1. not zero (an unused slot) and not link-local (fe80::/10: one L2
//      segment only);
//   2. an IPv4-mapped address (NCCL's default address family, AF_INET);
//   3. RoCE v2 (over UDP/IP: routed and ECN-marked) over RoCE v1;
//   4. the lowest index.
// A link-local entry is chosen only when the port has nothing else, and the
// reason says so; a table of zeros is an error (the interface has no IP).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/rdma/verbs/gid.h"

namespace hora::transport::rdma::verbs {

struct GidChoice {
  int index = 0;
  std::string reason;  // one line for the log: the GID, its kind, and why
};

// `port` names the port in messages ("mlx5_0:1"); `table` is its GID table
// (unused, all-zero entries may be listed or left out); `forcedIndex` is
// IbSettings::gidIndex.
GidChoice chooseGid(std::string_view port, LinkLayer linkLayer, const std::vector<GidEntry>& table,
                    std::optional<int> forcedIndex);

}  // namespace hora::transport::rdma::verbs
