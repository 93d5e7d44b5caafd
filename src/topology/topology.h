// Topology: what the machine looks like, and what that means for a
// communicator.
//
//   System sys = loadSystem();                 // this host, or HORA_TOPO_FILE
//   RankPlacement me = localPlacement(rank, hostHash, gpuBusId, sys);
//   ... all-gather RankPlacement over the bootstrap ...
//   TransportChoice t = chooseTransport(all[rank], all[peer], sys);
//   HORA_LOG(Info, "rank ", rank, " -> ", peer, ": ", transportName(t.kind), " (", t.reason, ")");
//   std::vector<int> ring = ringOrder(all, &sys);   // the same on every rank
//
// A System holds the devices that matter for communication (GPUs, NICs,
// NVSwitches), the PCIe tree and NVLink graph that join them, and the path
// class and bandwidth estimate between every pair of devices. It comes from
// hwloc (this host; NVLink from NVML when a driver is present) or from a file
// (hwloc XML, or NCCL's topology XML) describing a machine we are not on.
// See docs/topology.md for the rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hora::topology {

// How two devices reach each other, best first, as NCCL and `nvidia-smi topo -m`
// name them. The order matters: "at most PXB" compares with <=.
enum class PathClass : std::uint8_t {
  Loc,   // the same device
  Nvl,   // NVLink, directly or through NVSwitches
  Pix,   // PCIe through at most one PCIe switch (bridge)
  Pxb,   // PCIe through several switches, without the host bridge
  Phb,   // PCIe through a host bridge (the CPU's root complex)
  Node,  // PCIe across host bridges of one NUMA node
  Sys,   // PCIe and the SMP interconnect between NUMA nodes / sockets
  Net,   // a network: the devices are on different hosts
};

// "LOC", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS", "NET".
std::string_view pathClassName(PathClass cls);
// Parses those names (any case); nullopt otherwise.
std::optional<PathClass> parsePathClass(std::string_view name);
// A value of HORA_P2P_LEVEL / NCCL_P2P_LEVEL, as the worst class it allows
// here: a class name (not NET), one of NCCL's classes hora does not tell
// apart (NVB, C2C: as NVL; P2C, PXN: as PXB), or NCCL's old numbers 0-5.
// PHB (and 3) means what it means in NCCL, whose model has no NODE: any
// path through the CPU of one NUMA node, so NODE.
std::optional<PathClass> p2pLevelOf(std::string_view text);

enum class DeviceKind : std::uint8_t { Gpu, Nic, NvSwitch };
std::string_view deviceKindName(DeviceKind kind);  // "GPU", "NIC", "NVSwitch"

struct Device {
  DeviceKind kind = DeviceKind::Gpu;
  std::string name;     // "GPU0" (PCI bus order), "mlx5_0", "eth0", "NVSwitch0"
  std::string busId;    // "0000:07:00.0"; empty for a NIC known only by name
  std::string detail;   // what else is known: GPU model, "InfiniBand", "ib0"...
  std::string netdev;   // NIC: its network interface (ib0, eth0); empty when unknown
  int numaNode = 0;     // the NUMA node (OS index) whose CPUs are nearest
  bool rdma = false;    // NIC: RDMA capable (an InfiniBand HCA / verbs device)
  double speedGbps = 0; // NIC: port speed in Gbit/s; 0 when unknown
  double nvlinkGBps = 0;  // GPU: total NVLink bandwidth per direction; 0: none
  int smVersion = 0;      // GPU: compute capability as 10*major+minor (80); 0: unknown
};

struct Path {
  PathClass cls = PathClass::Sys;
  double bandwidthGBps = 0;  // estimate of the narrowest link on the way, GB/s
};

struct CpuSummary {
  int packages = 0;
  int numaNodes = 0;
  int cores = 0;
  int hardwareThreads = 0;
  std::string architecture;  // "x86_64", "ppc64le", or empty when unknown
  std::string model;         // first package's CPU model, when known
};

// A NUMA node and its CPUs (OS indices); cpus is empty when the
// description does not list them.
struct NumaNode {
  int osIndex = 0;
  std::vector<int> cpus;
};

// A PCIe switch and the devices below it (at any depth).
struct PciSwitch {
  std::string busId;  // the switch's upstream port; Hyper-V's virtual ones are ffff:ff:xx.0
  int numaNode = 0;
  std::vector<int> devices;  // indices into System::devices()
};

class SystemBuilder;

class System {
 public:
  // Where the description came from: "hwloc (this host)", "file.xml (NCCL topology XML)".
  const std::string& source() const { return source_; }
  const CpuSummary& cpu() const { return cpu_; }
  // GPUs first (in PCI bus order, named GPU0, GPU1, ...), then NICs, then NVSwitches.
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<PciSwitch>& pciSwitches() const { return switches_; }
  std::vector<int> devicesOfKind(DeviceKind kind) const;
  // NUMA nodes whose CPUs are known, by OS index.
  const std::vector<NumaNode>& numaNodes() const { return numa_; }
  // The CPUs nearest a device (those of its NUMA node); empty when unknown.
  std::vector<int> cpusNear(int device) const;

  // The GPU with this PCI bus id (any spelling); nullopt when there is none.
  std::optional<int> findGpu(std::string_view busId) const;
  // The NIC behind a network interface (the bootstrap's "ib0", "eth0"),
  // whether the NIC is named after it or after its verbs device (mlx5_0,
  // with ib0 as its interface); nullopt when no NIC has that interface.
  std::optional<int> findNicByInterface(std::string_view interfaceName) const;

  // Path between two devices (indices into devices()).
  const Path& path(int from, int to) const;
  PathClass pathBetween(int from, int to) const { return path(from, to).cls; }
  // The PCIe part alone, as if there were no NVLink; ring order breaks ties with it.
  PathClass pciePathBetween(int from, int to) const;

  // The NIC a GPU should use: best path class, then bandwidth, then RDMA
  // capable; GPUs tied for the same NICs are spread over them in bus order.
  std::optional<int> nearestNic(int gpu) const;
  bool hasRdmaNic() const;

  // A hash of the devices and paths. Equal on two hosts of the same shape;
  // ringOrder() uses it to be sure every rank orders rings from the same facts.
  std::uint64_t fingerprint() const { return fingerprint_; }

 private:
  friend class SystemBuilder;
  std::string source_;
  CpuSummary cpu_;
  std::vector<Device> devices_;
  std::vector<PciSwitch> switches_;
  std::vector<Path> paths_;         // devices² row-major
  std::vector<PathClass> pcie_;     // devices² row-major
  std::vector<int> nearestNic_;     // per device; -1 none
  std::vector<NumaNode> numa_;
  std::uint64_t fingerprint_ = 0;
};

// ---- Where a System comes from -------------------------------------------

struct LoadOptions {
  // Every GPU of the machine hangs off one NVSwitch fabric, so every GPU pair
  // is NVL (Azure ND A100 v4 / ND H100 v5, DGX A100/H100, HGX boards), though
  // the description does not say so: NCCL's partial topology files for those
  // VMs carry no NVLink, and VMs often hide NVSwitches from PCI. Never guessed:
  // set it (HORA_TOPO_NVSWITCH=1, hora-topo --nvswitch) or describe the NVLinks
  // in the file.
  bool assumeNvSwitch = false;
};

// This host through hwloc, plus NVLinks from NVML where a driver is installed.
System discoverLocalSystem(const LoadOptions& options = {});

// A machine described by a file: hwloc XML (<topology>, as `lstopo file.xml`
// writes) or NCCL's topology XML (<system>, the NCCL_TOPO_FILE format).
// Throws hora::Error: System when the file cannot be read, InvalidArgument
// when it is malformed or in another format.
System loadSystemFromFile(const std::string& path, const LoadOptions& options = {});

// What a communicator uses: the file named by HORA_TOPO_FILE (or
// NCCL_TOPO_FILE) when set, else discoverLocalSystem(); HORA_TOPO_NVSWITCH=1
// sets assumeNvSwitch. NVLinks NVML reports are added to a file's GPUs that
// exist on this host and have none.
System loadSystem();

// The RDMA NICs' names (as verbs names them: "mlx5_0") in the order a rank
// should prefer them: for a rank driving `gpu`, the NIC nearestNic gives it
// first, then by path class and bandwidth from the GPU; for a rank without
// one, the NICs on a NUMA node holding one of `cpus` first. Ties keep the
// System's order.
std::vector<std::string> rdmaNicsNearest(const System& system, std::optional<int> gpu, const std::vector<int>& cpus);
// The rails: the first of rdmaNicsNearest's NICs and every other as near
// the rank's data (the same path class and bandwidth from its GPU, or, for
// a rank without one, also on its CPUs' NUMA node), in that order.
std::vector<std::string> rdmaRailsNearest(const System& system, std::optional<int> gpu, const std::vector<int>& cpus);

// ---- Transports ----------------------------------------------------------

// What a rank tells the others during init (all-gathered).
struct RankPlacement {
  int rank = 0;
  std::uint64_t hostHash = 0;  // equal for ranks on the same host
  std::string gpuBusId;        // the GPU the rank drives; empty: none (host memory only)
  bool hasInfiniband = false;  // this host has an RDMA NIC hora can use
  // This rank has a libfabric device in use (transport/rdma/ofi/): one with
  // a hardware provider, or any provider when HORA_TRANSPORT=ofi.
  bool hasOfi = false;
  // Which fabric the rank's ib port is on: ranks reach each other over ib
  // only on the same link layer and, on InfiniBand, the same subnet (the
  // prefix of GID 0; a LID routes only within its subnet).
  enum class LinkLayer : std::uint8_t { Unknown, InfiniBand, Ethernet };
  LinkLayer ibLinkLayer = LinkLayer::Unknown;
  std::uint64_t ibSubnet = 0;
  // System::fingerprint() of the rank's System; 0 when not given (see ringOrder).
  std::uint64_t topologyFingerprint = 0;
};

// Whether two RDMA ports can reach each other: the same link layer, and on
// InfiniBand the same subnet prefix (a LID routes only within its subnet).
// Two RoCE ports are taken to (IP routing decides, which a GID does not
// tell). Unknown on either side: assumed to.
bool rdmaPortsMeet(RankPlacement::LinkLayer a, std::uint64_t subnetA, RankPlacement::LinkLayer b,
                   std::uint64_t subnetB);

// This rank's placement: hasInfiniband is set when the System has an RDMA
// NIC and hora was built with the InfiniBand verbs transport.
RankPlacement localPlacement(int rank, std::uint64_t hostHash, std::string gpuBusId,
                             const System& system);

// Ofi comes last so that the values of the older kinds stay as they were.
enum class TransportKind : std::uint8_t { P2p, Shm, Ib, Tcp, Ofi };
std::string_view transportName(TransportKind kind);  // "p2p", "shm", "ib", "tcp", "ofi"
std::optional<TransportKind> parseTransportName(std::string_view name);

struct TransportChoice {
  TransportKind kind = TransportKind::Tcp;
  std::string reason;  // one line for HORA_DEBUG=INFO
};

// The rules' knobs; fromEnvironment() reads them (HORA_ name first, then NCCL_):
//   HORA_P2P_DISABLE / NCCL_P2P_DISABLE = 1   never p2p (other numbers: as 0, as in NCCL)
//   HORA_SHM_DISABLE / NCCL_SHM_DISABLE = 1   never shm (same-host pairs use the network;
//                                             other numbers: as 0, as in NCCL)
//   HORA_IB_DISABLE  / NCCL_IB_DISABLE  != 0  never ib
//   HORA_OFI_DISABLE                    = 1   never ofi
//   HORA_NET / NCCL_NET = IB|OFI|Socket       the only network transport to use
//                                             (Libfabric, AWS Libfabric: OFI)
//                                             (Socket: tcp; IB: ib, else tcp)
//   HORA_P2P_LEVEL   / NCCL_P2P_LEVEL   = LOC|NVL|PIX|PXB|PHB|NODE|SYS: the worst path p2p may take
//                                             (p2pLevelOf: NCCL's names as NCCL means them)
//   HORA_TRANSPORT = p2p|shm|ib|ofi|tcp use that one wherever it can connect the pair
struct TransportPolicy {
  bool p2pDisabled = false;
  bool shmDisabled = false;
  bool ibDisabled = false;
  std::string ibDisabledBy = "IB_DISABLE=1";  // the setting that disabled ib, for the reason shown
  bool ofiDisabled = false;
  PathClass p2pLevel = PathClass::Pxb;
  std::string p2pLevelSetBy;  // "P2P_LEVEL=PHB" when set, for the reason shown; empty: the default
  std::optional<TransportKind> forced;

  // Throws hora::Error(InvalidArgument) naming the variable on a bad value.
  static TransportPolicy fromEnvironment();
};

// How ranks a and b should be connected. `localSystem` must describe the host
// of a and b when they share one (it is consulted only then).
TransportChoice chooseTransport(const RankPlacement& a, const RankPlacement& b,
                                const System& localSystem, const TransportPolicy& policy);
// The same with TransportPolicy::fromEnvironment().
TransportChoice chooseTransport(const RankPlacement& a, const RankPlacement& b,
                                const System& localSystem);

// ---- Rings ---------------------------------------------------------------

// The ranks in ring order, starting with the lowest rank: each host's ranks
// together (hosts in the order of their lowest rank), so the ring crosses each
// host boundary once; inside a host the GPUs in the order that keeps NVLink
// neighbours, then PCIe-switch neighbours, then NUMA neighbours adjacent
// (docs/topology.md has the exact rule); ranks sharing a GPU next to each
// other; ranks without a GPU last, by rank. Throws InvalidArgument when a
// rank appears twice.
//
// Every rank must get the same ring from the same placements, but each rank
// knows only its own host's System. So the System is used only where it
// cannot make ranks disagree: every placement carries this System's
// fingerprint (hosts of one shape), or no placement carries a fingerprint and
// all are on one host. Otherwise (or with nullptr) GPUs go in bus id order.
std::vector<int> ringOrder(const std::vector<RankPlacement>& ranks, const System* system);

}  // namespace hora::topology
