// A port's global identifiers (GIDs) as verbs reports them, without
// <infiniband/verbs.h>, so the rules that pick one (gid_choice.h) and that
// tell whether two ports can talk (fabric.h) are plain functions.
//
// A GID is 16 bytes in network order, laid out like an IPv6 address. On
// InfiniBand, GID 0 is the port's own: the subnet prefix (first 8 bytes,
// fe80:: unless the subnet manager sets another) and the port GUID. On RoCE
// the GID table mirrors the IP addresses of the Ethernet interface, each
// once per RoCE version: an IPv4 address appears IPv4-mapped (::ffff:a.b.c.d),
// an IPv6 one as itself, and unused entries are all zeros.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace hora::transport::rdma::verbs {

using Gid = std::array<std::uint8_t, 16>;

// What a port runs on (ibv_port_attr::link_layer).
enum class LinkLayer : std::uint8_t { InfiniBand, Ethernet };

// The kind of a GID table entry (ibv_gid_entry::gid_type; sysfs
// gid_attrs/types). RoCE v1 frames are Ethernet-only (one L2 segment);
// RoCE v2 runs over UDP/IP and routes.
enum class GidType : std::uint8_t { InfiniBand, RoceV1, RoceV2 };

struct GidEntry {
  int index = 0;
  Gid gid{};
  GidType type = GidType::InfiniBand;
};

const char* linkLayerName(LinkLayer layer);
const char* gidTypeName(GidType type);

bool isZero(const Gid& gid);
// fe80::/10: an IPv6 link-local address, reachable only on one L2 segment.
bool isLinkLocal(const Gid& gid);
// ::ffff:a.b.c.d, how a RoCE port lists an IPv4 address.
bool isIpv4Mapped(const Gid& gid);

// The GID as text: "10.0.0.1" for an IPv4-mapped one, IPv6 notation
// otherwise ("fe80::248a:703:5d:7f1").
std::string gidText(const Gid& gid);

}  // namespace hora::transport::rdma::verbs
