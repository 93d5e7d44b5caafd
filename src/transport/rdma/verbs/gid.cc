#include "transport/rdma/verbs/gid.h"

#include <arpa/inet.h>

#include <algorithm>

namespace hora::transport::rdma::verbs {

const char* linkLayerName(LinkLayer layer) {
  return layer == LinkLayer::InfiniBand ? "InfiniBand" : "Ethernet";
}

const char* gidTypeName(GidType type) {
  switch (type) {
    case GidType::InfiniBand: return "IB";
    case GidType::RoceV1: return "RoCE v1";
    case GidType::RoceV2: return "RoCE v2";
  }
  return "unknown";
}

bool isZero(const Gid& gid) {
  return std::all_of(gid.begin(), gid.end(), [](std::uint8_t byte) { return byte == 0; });
}

bool isLinkLocal(const Gid& gid) { return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80; }

bool isIpv4Mapped(const Gid& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](std::uint8_t byte) { return byte == 0; }) &&
         gid[10] == 0xff && gid[11] == 0xff;
}

std::string gidText(const Gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  if (isIpv4Mapped(gid)) {
    ::inet_ntop(AF_INET, gid.data() + 12, text, sizeof(text));
  } else {
    ::inet_ntop(AF_INET6, gid.data(), text, sizeof(text));
  }
  return text;
}

}  // namespace hora::transport::rdma::verbs
