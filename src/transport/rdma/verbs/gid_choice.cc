#include "transport/rdma/verbs/gid_choice.h"

#include <algorithm>
#include <tuple>

#include "base/error.h"

namespace hora::transport::rdma::verbs {

namespace {

std::string describe(const GidEntry& entry) {
  return strCat("GID ", entry.index, " (", gidTypeName(entry.type), ", ", gidText(entry.gid), ")");
}

std::string indexList(const std::vector<GidEntry>& table) {
  std::string list;
  for (const auto& entry : table)
    if (!isZero(entry.gid)) list += strCat(list.empty() ? "" : ", ", entry.index);
  return list.empty() ? "none" : list;
}

// Larger is better, in the order of the rules in the header; the negated
// index makes the lowest index win a tie.
auto preference(const GidEntry& entry) {
  return std::make_tuple(!isLinkLocal(entry.gid), isIpv4Mapped(entry.gid), entry.type == GidType::RoceV2,
                         -entry.index);
}

// What the chosen entry lacks, so a log reader sees why traffic may not
// route: "" for the preferred kind.
std::string shortcomings(const GidEntry& entry) {
  std::string lacks;
  if (isLinkLocal(entry.gid)) lacks += "; only link-local GIDs: reaches one L2 segment";
  else if (!isIpv4Mapped(entry.gid)) lacks += "; no IPv4 GID: uses IPv6";
  if (entry.type != GidType::RoceV2) lacks += "; no RoCE v2 GID for it: RoCE v1 does not route";
  return lacks;
}

}  // namespace

GidChoice chooseGid(std::string_view port, LinkLayer linkLayer, const std::vector<GidEntry>& table,
                    std::optional<int> forcedIndex) {
  if (linkLayer == LinkLayer::InfiniBand) {
    return {0, strCat(port, ": GID 0, the port's own (InfiniBand",
                      forcedIndex ? "; NCCL_IB_GID_INDEX applies to RoCE only" : "", ")")};
  }

  if (forcedIndex) {
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const GidEntry& entry) { return entry.index == *forcedIndex; });
    // An all-zero entry is an unused slot, as good as absent.
    if (it == table.end() || isZero(it->gid))
      fail(ErrorKind::InvalidArgument, port, ": NCCL_IB_GID_INDEX (or HORA_IB_GID_INDEX) is ", *forcedIndex,
           ", but the port has no GID ", *forcedIndex, " (GIDs it has: ", indexList(table), ")");
    return {it->index, strCat(port, ": ", describe(*it), ", set by NCCL_IB_GID_INDEX")};
  }

  const GidEntry* best = nullptr;
  for (const auto& entry : table)
    if (!isZero(entry.gid) && (best == nullptr || preference(entry) > preference(*best))) best = &entry;
  if (best == nullptr)
    fail(ErrorKind::System, port, ": RoCE port has no GID (its Ethernet interface has no IP address)");
  return {best->index, strCat(port, ": ", describe(*best), ", chosen automatically", shortcomings(*best))};
}

}  // namespace hora::transport::rdma::verbs
