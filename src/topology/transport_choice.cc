// Which transport connects two ranks. The rules, in order:
//   different hosts      -> ib when both hosts have a usable RDMA NIC, else
//                           ofi when both ranks have a libfabric device, else tcp
//   same host, two GPUs  -> p2p when their path is no worse than the P2P level
//                           (PXB by default: NVLink or a PCIe switch tree)
//   same host otherwise  -> shm
// then the overrides (disables, HORA_TRANSPORT) as TransportPolicy documents.
#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "base/env.h"
#include "base/error.h"
#include "hora_config.h"
#include "topology/bus_id.h"
#include "topology/topology.h"

namespace hora::topology {

namespace {

constexpr std::array<std::string_view, 5> kTransportNames = {"p2p", "shm", "ib", "tcp", "ofi"};

bool flag(std::initializer_list<const char*> names) { return env::getInt(names, 0) != 0; }
// NCCL acts on NCCL_P2P_DISABLE and NCCL_SHM_DISABLE only when they are 1
// (2 leaves p2p on there), and scripts written for NCCL must mean the same here.
bool flagIsOne(std::initializer_list<const char*> names) { return env::getInt(names, 0) == 1; }

std::string lower(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

struct GpuPair {
  std::optional<Path> path;  // set when both GPUs are known to the System
  std::string why;           // why p2p is impossible, when it is
};

// Where two same-host ranks' GPUs stand to each other.
GpuPair gpuPair(const RankPlacement& a, const RankPlacement& b, const System& system) {
  if (a.gpuBusId.empty() || b.gpuBusId.empty())
    return {std::nullopt, strCat("rank ", a.gpuBusId.empty() ? a.rank : b.rank, " has no GPU")};
  auto ga = system.findGpu(a.gpuBusId);
  auto gb = system.findGpu(b.gpuBusId);
  if (!ga || !gb) {
    const std::string& missing = !ga ? a.gpuBusId : b.gpuBusId;
    return {std::nullopt, strCat("GPU ", missing, " is not in the topology (", system.source(), ")")};
  }
  return {system.path(*ga, *gb), ""};
}

std::string describe(const Path& path) {
  std::ostringstream out;
  out << pathClassName(path.cls);
  if (path.bandwidthGBps > 0) out << ", ~" << static_cast<long>(path.bandwidthGBps + 0.5) << " GB/s";
  return out.str();
}

bool sameFabric(const RankPlacement& a, const RankPlacement& b) {
  return rdmaPortsMeet(a.ibLinkLayer, a.ibSubnet, b.ibLinkLayer, b.ibSubnet);
}

TransportChoice network(const RankPlacement& a, const RankPlacement& b, const TransportPolicy& policy,
                        const std::string& prefix) {
  const bool both = a.hasInfiniband && b.hasInfiniband;
  if (both && !policy.ibDisabled && sameFabric(a, b))
    return {TransportKind::Ib, prefix + "both hosts have an RDMA NIC"};
  std::string why = !both                ? strCat("no usable RDMA NIC on rank ", !a.hasInfiniband ? a.rank : b.rank, "'s host")
                    : policy.ibDisabled ? strCat("IB disabled (", policy.ibDisabledBy, ")")
                                        : "their RDMA ports are on different fabrics (link layer or subnet)";
  if (a.hasOfi && b.hasOfi && !policy.ofiDisabled)
    return {TransportKind::Ofi, prefix + why + "; both ranks have a libfabric device"};
  return {TransportKind::Tcp, prefix + why};
}

// The choice without HORA_TRANSPORT.
TransportChoice natural(const RankPlacement& a, const RankPlacement& b, const System& system,
                        const TransportPolicy& policy) {
  if (a.hostHash != b.hostHash) return network(a, b, policy, "different hosts; ");

  GpuPair gpus = gpuPair(a, b, system);
  std::string notP2p;
  if (!gpus.path) {
    notP2p = gpus.why;
  } else if (policy.p2pDisabled) {
    notP2p = "P2P disabled (P2P_DISABLE=1)";
  } else if (gpus.path->cls > policy.p2pLevel) {
    notP2p = strCat("GPUs ", a.gpuBusId, " and ", b.gpuBusId, " connect through ", describe(*gpus.path),
                    ", beyond the P2P level ", pathClassName(policy.p2pLevel),
                    policy.p2pLevelSetBy.empty() ? "" : strCat(" (", policy.p2pLevelSetBy, ")"));
  } else if (gpus.path->cls == PathClass::Loc) {
    return {TransportKind::P2p, strCat("same host; both ranks drive GPU ", a.gpuBusId)};
  } else {
    return {TransportKind::P2p, strCat("same host; GPUs ", a.gpuBusId, " and ", b.gpuBusId, " connect through ",
                                       describe(*gpus.path))};
  }
  if (!policy.shmDisabled) return {TransportKind::Shm, "same host; " + notP2p};
  return network(a, b, policy, "same host, but SHM disabled (SHM_DISABLE=1) and " + notP2p + "; ");
}

}  // namespace

bool rdmaPortsMeet(RankPlacement::LinkLayer a, std::uint64_t subnetA, RankPlacement::LinkLayer b,
                   std::uint64_t subnetB) {
  using Layer = RankPlacement::LinkLayer;
  if (a == Layer::Unknown || b == Layer::Unknown) return true;
  if (a != b) return false;
  return a == Layer::Ethernet || subnetA == subnetB;
}

std::string_view transportName(TransportKind kind) {
  // A kind can come from a peer (a mismatched build): name it, never index past the table.
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kTransportNames) ? kTransportNames[index] : std::string_view("an unknown transport");
}

std::optional<TransportKind> parseTransportName(std::string_view name) {
  std::string wanted = lower(name);
  for (std::size_t i = 0; i < kTransportNames.size(); ++i)
    if (kTransportNames[i] == wanted) return static_cast<TransportKind>(i);
  return std::nullopt;
}

std::optional<PathClass> p2pLevelOf(std::string_view text) {
  // NCCL's model hangs every PCIe tree of a NUMA node off its CPU, so two
  // host bridges of one node meet as PHB there: NCCL's PHB ("P2P within a
  // NUMA node") takes in hora's NODE, which only hwloc's finer tree tells apart.
  if (auto cls = parsePathClass(text); cls && *cls != PathClass::Net) return *cls == PathClass::Phb ? PathClass::Node : *cls;
  // NCCL's classes hora does not tell apart, as the level they allow here:
  // NVLink through a GPU (NVB) and chip-to-chip (C2C) lie below PIX, so
  // they allow what NVL allows; PCIe through a CPU's root (P2C) and NCCL's
  // PXN path lie between PXB and PHB, so they allow what PXB allows. (NCCL
  // compares its names case-sensitively; hora's parser does not.)
  constexpr std::pair<std::string_view, PathClass> kNcclOnly[] = {
      {"NVB", PathClass::Nvl}, {"C2C", PathClass::Nvl}, {"P2C", PathClass::Pxb}, {"PXN", PathClass::Pxb}};
  auto sameName = [&](std::string_view name) {
    return std::equal(text.begin(), text.end(), name.begin(), name.end(),
                      [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; });
  };
  for (const auto& [name, cls] : kNcclOnly)
    if (sameName(name)) return cls;
  // NCCL's old numbers (paths.cc: LOC, PIX, PXB, PHB, SYS, and SYS above),
  // PHB read as NCCL means it (above).
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    constexpr PathClass kOld[] = {PathClass::Loc, PathClass::Pix, PathClass::Pxb, PathClass::Node, PathClass::Sys};
    const std::size_t old = text.size() > 2 ? std::size(kOld) : std::stoul(std::string(text));
    return kOld[std::min<std::size_t>(old, std::size(kOld) - 1)];
  }
  return std::nullopt;
}

TransportPolicy TransportPolicy::fromEnvironment() {
  TransportPolicy policy;
  policy.p2pDisabled = flagIsOne({"HORA_P2P_DISABLE", "NCCL_P2P_DISABLE"});
  policy.shmDisabled = flagIsOne({"HORA_SHM_DISABLE", "NCCL_SHM_DISABLE"});
  policy.ibDisabled = flag({"HORA_IB_DISABLE", "NCCL_IB_DISABLE"});
  if (policy.ibDisabled) policy.ibDisabledBy = "IB_DISABLE=" + *env::get({"HORA_IB_DISABLE", "NCCL_IB_DISABLE"});
  if (auto level = env::get({"HORA_P2P_LEVEL", "NCCL_P2P_LEVEL"})) {
    auto parsed = p2pLevelOf(*level);
    if (!parsed)
      fail(ErrorKind::InvalidArgument, "P2P level '", *level,
           "' (HORA_P2P_LEVEL / NCCL_P2P_LEVEL) is not one of LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, NODE, "
           "SYS or NCCL's old numbers 0-5");
    policy.p2pLevel = *parsed;
    policy.p2pLevelSetBy = "P2P_LEVEL=" + *level;
  }
  policy.ofiDisabled = flag({"HORA_OFI_DISABLE"});
  if (auto net = env::get({"HORA_NET", "NCCL_NET"})) {
    // NCCL's names for its networks: "IB" (verbs) and "Socket" built in,
    // and libfabric's plugin (aws-ofi-nccl), which names itself "AWS
    // Libfabric" or "Libfabric": scripts written for EFA set those.
    const std::string wanted = lower(*net);
    if (wanted == "socket") {
      policy.ibDisabled = policy.ofiDisabled = true;
      policy.ibDisabledBy = "NET=" + *net;
    } else if (wanted == "ib") {
      policy.ofiDisabled = true;
    } else if (wanted == "ofi" || wanted == "libfabric" || wanted == "aws libfabric") {
      policy.ibDisabled = true;
      policy.ibDisabledBy = "NET=" + *net;
    } else {
      fail(ErrorKind::InvalidArgument, "network '", *net,
           "' (HORA_NET / NCCL_NET) is not one of IB, OFI (or Libfabric, AWS Libfabric), Socket");
    }
  }
  if (auto forced = env::get({"HORA_TRANSPORT"})) {
    policy.forced = parseTransportName(*forced);
    if (!policy.forced)
      fail(ErrorKind::InvalidArgument, "HORA_TRANSPORT='", *forced, "' is not one of p2p, shm, ib, ofi, tcp");
  }
  return policy;
}

RankPlacement localPlacement(int rank, std::uint64_t hostHash, std::string gpuBusId, const System& system) {
  RankPlacement placement;
  placement.rank = rank;
  placement.hostHash = hostHash;
  if (!gpuBusId.empty()) placement.gpuBusId = canonicalBusId(gpuBusId).value_or(gpuBusId);
  placement.hasInfiniband = HORA_HAVE_IBVERBS && system.hasRdmaNic();
  placement.topologyFingerprint = system.fingerprint();
  return placement;
}

TransportChoice chooseTransport(const RankPlacement& a, const RankPlacement& b, const System& localSystem,
                                const TransportPolicy& policy) {
  HORA_CHECK_ARG(a.rank != b.rank, "chooseTransport: rank ", a.rank, " cannot be its own peer");
  TransportChoice choice = natural(a, b, localSystem, policy);
  if (!policy.forced || *policy.forced == choice.kind) return choice;

  // HORA_TRANSPORT: honoured where the forced transport can join the pair.
  const TransportKind forced = *policy.forced;
  const bool sameHost = a.hostHash == b.hostHash;
  std::string impossible;
  switch (forced) {
    case TransportKind::Tcp:
      break;  // loopback or network: always possible
    case TransportKind::Ib:
      if (!a.hasInfiniband || !b.hasInfiniband) impossible = "a host has no usable RDMA NIC";
      else if (policy.ibDisabled) impossible = strCat("IB is disabled (", policy.ibDisabledBy, ")");
      else if (!sameFabric(a, b)) impossible = "their RDMA ports are on different fabrics";
      break;
    case TransportKind::Ofi:
      if (!a.hasOfi || !b.hasOfi) impossible = strCat("rank ", !a.hasOfi ? a.rank : b.rank, " has no libfabric device");
      else if (policy.ofiDisabled) impossible = "OFI is disabled (HORA_OFI_DISABLE=1 or NCCL_NET)";
      break;
    case TransportKind::Shm:
      if (!sameHost) impossible = "the ranks are on different hosts";
      else if (policy.shmDisabled) impossible = "SHM is disabled (SHM_DISABLE=1)";
      break;
    case TransportKind::P2p:
      if (!sameHost) impossible = "the ranks are on different hosts";
      else if (policy.p2pDisabled) impossible = "P2P is disabled (P2P_DISABLE=1)";
      else if (auto gpus = gpuPair(a, b, localSystem); !gpus.path) impossible = gpus.why;
      break;
  }
  const std::string name(transportName(forced));
  if (!impossible.empty()) {
    choice.reason = strCat("HORA_TRANSPORT=", name, " cannot connect ranks ", a.rank, " and ", b.rank, " (",
                           impossible, "); ", choice.reason);
    return choice;
  }
  return {forced, strCat("HORA_TRANSPORT=", name, " (else: ", transportName(choice.kind), ", ", choice.reason, ")")};
}

TransportChoice chooseTransport(const RankPlacement& a, const RankPlacement& b, const System& localSystem) {
  return chooseTransport(a, b, localSystem, TransportPolicy::fromEnvironment());
}

}  // namespace hora::topology
