#include "topology/system_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include "base/error.h"

namespace hora::topology {

double pcieLinkGBps(double gigaTransfersPerSecond, int width) {
  if (gigaTransfersPerSecond <= 0 || width <= 0) return 0;
  // Gen1/Gen2 spend 10 bits on the wire per byte; Gen3 and later 130 per 128.
  double encoding = gigaTransfersPerSecond <= 5.0 ? 0.8 : 128.0 / 130.0;
  return gigaTransfersPerSecond * width * encoding / 8.0;
}

double nvlinkGBpsPerLink(int smVersion) {
  if (smVersion >= 100) return 50;  // NVLink 5
  if (smVersion >= 70) return 25;   // NVLink 2, 3 and 4
  if (smVersion >= 60) return 20;   // NVLink 1 (P100)
  return 25;                        // unknown: the common case
}

double nvswitchGBpsPerGpu(int smVersion) {
  if (smVersion >= 100) return 900;  // 18 NVLink 5 links
  if (smVersion >= 90) return 450;   // 18 NVLink 4 links
  if (smVersion >= 80) return 300;   // 12 NVLink 3 links
  if (smVersion >= 70) return 150;   // 6 NVLink 2 links
  return 300;                        // unknown: an A100-class estimate
}

std::string tooManyDevicesText(DeviceKind kind) {
  const char* plural = kind == DeviceKind::Gpu ? "GPUs" : kind == DeviceKind::Nic ? "NICs" : "NVSwitches";
  return strCat("more than ", kMaxDevicesPerKind, " ", plural, ": hora describes at most ", kMaxDevicesPerKind,
                " devices of a kind, as NCCL does, and no machine has that many");
}

SystemBuilder::SystemBuilder(std::string source) : source_(std::move(source)) {}

int SystemBuilder::cpuNode(int numaNode) {
  auto found = cpuByNuma_.find(numaNode);
  if (found != cpuByNuma_.end()) return found->second;
  int id = static_cast<int>(nodes_.size());
  nodes_.push_back(Node{NodeKind::Cpu, -1, id, numaNode, "", false, 0});
  cpuByNuma_[numaNode] = id;
  return id;
}

int SystemBuilder::addHostBridge(int cpu) {
  HORA_ENFORCE(cpu >= 0 && cpu < static_cast<int>(nodes_.size()), "cpu node ", cpu);
  int id = static_cast<int>(nodes_.size());
  nodes_.push_back(Node{NodeKind::HostBridge, cpu, nodes_[cpu].cpu, nodes_[cpu].numaNode, "", false, 0});
  return id;
}

int SystemBuilder::addBridge(int parent, std::string busId, bool isSwitch, double linkGBps) {
  HORA_ENFORCE(parent >= 0 && parent < static_cast<int>(nodes_.size()), "parent node ", parent);
  int id = static_cast<int>(nodes_.size());
  const Node& up = nodes_[parent];
  nodes_.push_back(Node{NodeKind::Bridge, parent, up.cpu, up.numaNode, std::move(busId), isSwitch, linkGBps});
  return id;
}

int SystemBuilder::addDevice(int parent, Device device, double linkGBps) {
  HORA_ENFORCE(parent >= -1 && parent < static_cast<int>(nodes_.size()), "parent node ", parent);
  int& ofKind = perKind_[static_cast<std::size_t>(device.kind)];
  if (ofKind >= kMaxDevicesPerKind) fail(ErrorKind::InvalidArgument, source_, ": ", tooManyDevicesText(device.kind));
  ++ofKind;
  if (parent >= 0) device.numaNode = nodes_[parent].numaNode;
  devices_.push_back(PendingDevice{std::move(device), parent, linkGBps});
  return static_cast<int>(devices_.size()) - 1;
}

int SystemBuilder::findDevice(const std::string& busId, DeviceKind kind) const {
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].device.kind == kind && devices_[i].device.busId == busId) return static_cast<int>(i);
  return -1;
}

void SystemBuilder::addNvLink(int a, int b, double GBps) {
  if (a == b || GBps <= 0) return;
  auto [at, isNew] = nvlinkIndex_.emplace(std::make_pair(std::min(a, b), std::max(a, b)), nvlinks_.size());
  if (isNew) nvlinks_.push_back(NvLinkEdge{a, b, 0});
  nvlinks_[at->second].GBps += GBps;
}

void SystemBuilder::addNvLinkToCpu(int device, int cpu, double GBps) { addNvLink(device, -(cpu + 1), GBps); }

bool SystemBuilder::hasNvLinks(int device) const {
  return std::any_of(nvlinks_.begin(), nvlinks_.end(),
                     [&](const NvLinkEdge& e) { return e.a == device || e.b == device; });
}

void SystemBuilder::attachAllGpusToNvSwitchFabric() {
  int fabric = -1;
  for (int id = 0; id < deviceCount(); ++id) {
    if (device(id).kind != DeviceKind::Gpu || hasNvLinks(id)) continue;
    if (fabric < 0) {
      Device nvswitch;
      nvswitch.kind = DeviceKind::NvSwitch;
      nvswitch.detail = "assumed fabric (LoadOptions::assumeNvSwitch)";
      fabric = addDevice(-1, nvswitch, 0);
    }
    addNvLink(id, fabric, nvswitchGBpsPerGpu(device(id).smVersion));
  }
}

std::vector<int> SystemBuilder::ancestors(int node) const {
  std::vector<int> chain;
  for (int n = node; n >= 0; n = nodes_[n].parent) chain.push_back(n);
  return chain;
}

PathClass SystemBuilder::pcieClass(int nodeA, int nodeB) const {
  if (nodeA < 0 || nodeB < 0) return PathClass::Sys;  // not on PCIe (an assumed fabric)
  if (nodes_[nodeA].cpu != nodes_[nodeB].cpu) return PathClass::Sys;
  auto chainA = ancestors(nodeA);
  auto chainB = ancestors(nodeB);
  std::size_t belowA = 0;
  while (std::find(chainB.begin(), chainB.end(), chainA[belowA]) == chainB.end()) ++belowA;
  int common = chainA[belowA];
  std::size_t belowB = static_cast<std::size_t>(std::find(chainB.begin(), chainB.end(), common) - chainB.begin());
  switch (nodes_[common].kind) {
    case NodeKind::Bridge: {
      // Bridges crossed: those below the meeting point on both sides, plus it.
      auto bridges = [&](const std::vector<int>& chain, std::size_t count) {
        return std::count_if(chain.begin(), chain.begin() + static_cast<long>(count),
                             [&](int n) { return nodes_[n].kind == NodeKind::Bridge; });
      };
      return bridges(chainA, belowA) + bridges(chainB, belowB) == 0 ? PathClass::Pix : PathClass::Pxb;
    }
    case NodeKind::HostBridge:
      return PathClass::Phb;
    case NodeKind::Cpu: {
      auto hasHostBridge = [&](const std::vector<int>& chain) {
        return std::any_of(chain.begin(), chain.end(),
                           [&](int n) { return nodes_[n].kind == NodeKind::HostBridge; });
      };
      // Two host bridges of one NUMA node: NODE. A description without host
      // bridges (NCCL's files hang PCI trees off the CPU) goes through the CPU: PHB.
      return hasHostBridge(chainA) && hasHostBridge(chainB) ? PathClass::Node : PathClass::Phb;
    }
  }
  return PathClass::Sys;
}

double SystemBuilder::pcieBandwidth(int deviceA, int deviceB) const {
  const auto& a = devices_[deviceA];
  const auto& b = devices_[deviceB];
  if (a.parentNode < 0 || b.parentNode < 0) return 0;
  double narrowest = std::numeric_limits<double>::infinity();
  auto consider = [&](double GBps) {
    if (GBps > 0) narrowest = std::min(narrowest, GBps);
  };
  consider(a.linkGBps);
  consider(b.linkGBps);
  auto chainA = ancestors(a.parentNode);
  auto chainB = ancestors(b.parentNode);
  // Links of the bridges below the meeting point are on the way.
  for (int n : chainA)
    if (std::find(chainB.begin(), chainB.end(), n) == chainB.end()) consider(nodes_[n].linkGBps);
  for (int n : chainB)
    if (std::find(chainA.begin(), chainA.end(), n) == chainA.end()) consider(nodes_[n].linkGBps);
  if (nodes_[a.parentNode].cpu != nodes_[b.parentNode].cpu) consider(kSmpInterconnectGBps);
  return std::isinf(narrowest) ? kDefaultPcieGBps : narrowest;
}

std::vector<double> SystemBuilder::fabricGBps() const {
  std::vector<double> total(devices_.size(), 0);
  auto isSwitch = [&](int vertex) { return vertex >= 0 && devices_[vertex].device.kind == DeviceKind::NvSwitch; };
  for (const auto& e : nvlinks_) {
    if (e.a >= 0 && isSwitch(e.b)) total[static_cast<std::size_t>(e.a)] += e.GBps;
    if (e.b >= 0 && isSwitch(e.a)) total[static_cast<std::size_t>(e.b)] += e.GBps;
  }
  return total;
}

Path SystemBuilder::nvlinkPath(int a, int b, const std::vector<double>& fabric) const {
  auto edge = nvlinkIndex_.find(std::make_pair(std::min(a, b), std::max(a, b)));
  double direct = edge == nvlinkIndex_.end() ? 0 : nvlinks_[edge->second].GBps;
  // The NVSwitches of a machine are trunked into one fabric (DGX-2 joins its
  // two boards' switches; descriptions often list only GPU-to-switch links),
  // so two GPUs that each reach a switch reach each other at the narrower
  // of their bandwidths into the fabric.
  double viaSwitches = 0;
  if (devices_[a].device.kind == DeviceKind::Gpu && devices_[b].device.kind == DeviceKind::Gpu)
    viaSwitches = std::min(fabric[static_cast<std::size_t>(a)], fabric[static_cast<std::size_t>(b)]);
  if (direct <= 0 && viaSwitches <= 0) return Path{PathClass::Sys, 0};
  return Path{PathClass::Nvl, std::max(direct, viaSwitches)};
}

System SystemBuilder::build() {
  const int count = deviceCount();
  // Final order: GPUs, NICs, NVSwitches; each by bus id (NICs without one last, by name).
  std::vector<int> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const Device& a = devices_[x].device;
    const Device& b = devices_[y].device;
    return std::make_tuple(a.kind, a.busId.empty(), a.busId, a.name) <
           std::make_tuple(b.kind, b.busId.empty(), b.busId, b.name);
  });

  System system;
  system.source_ = source_;
  system.cpu_ = cpu_;
  for (const auto& [node, cpus] : numaCpus_)
    if (!cpus.empty()) system.numa_.push_back({node, cpus});
  std::vector<double> nvlinkTotal(static_cast<std::size_t>(count), 0);
  for (const auto& e : nvlinks_) {
    if (e.a >= 0) nvlinkTotal[static_cast<std::size_t>(e.a)] += e.GBps;
    if (e.b >= 0) nvlinkTotal[static_cast<std::size_t>(e.b)] += e.GBps;
  }
  int perKind[3] = {0, 0, 0};
  for (int id : order) {
    Device device = devices_[id].device;
    int k = perKind[static_cast<int>(device.kind)]++;
    if (device.kind == DeviceKind::Gpu) device.name = strCat("GPU", k);
    else if (device.name.empty()) device.name = strCat(deviceKindName(device.kind), k);
    if (device.kind == DeviceKind::Gpu) device.nvlinkGBps = nvlinkTotal[static_cast<std::size_t>(id)];
    system.devices_.push_back(std::move(device));
  }

  const auto n = static_cast<std::size_t>(count);
  const std::vector<double> fabric = fabricGBps();
  system.paths_.assign(n * n, Path{});
  system.pcie_.assign(n * n, PathClass::Sys);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      int a = order[i], b = order[j];
      Path& path = system.paths_[i * n + j];
      PathClass& pcie = system.pcie_[i * n + j];
      if (i == j) {
        path = Path{PathClass::Loc, 0};
        pcie = PathClass::Loc;
        continue;
      }
      pcie = pcieClass(devices_[a].parentNode, devices_[b].parentNode);
      path = nvlinkPath(a, b, fabric);
      if (path.cls != PathClass::Nvl) path = Path{pcie, pcieBandwidth(a, b)};
    }
  }

  // Nearest NIC: best path, then bandwidth, then RDMA; ties spread over GPUs.
  system.nearestNic_.assign(n, -1);
  std::vector<int> load(n, 0);
  for (std::size_t g = 0; g < n; ++g) {
    if (system.devices_[g].kind != DeviceKind::Gpu) continue;
    int best = -1;
    auto key = [&](std::size_t nic) {
      const Path& p = system.paths_[g * n + nic];
      return std::make_tuple(p.cls, -p.bandwidthGBps, !system.devices_[nic].rdma);
    };
    for (std::size_t nic = 0; nic < n; ++nic) {
      if (system.devices_[nic].kind != DeviceKind::Nic) continue;
      if (best < 0) {
        best = static_cast<int>(nic);
        continue;
      }
      auto k = key(nic), bestKey = key(static_cast<std::size_t>(best));
      if (k < bestKey || (k == bestKey && load[nic] < load[static_cast<std::size_t>(best)]))
        best = static_cast<int>(nic);
    }
    if (best >= 0) {
      system.nearestNic_[g] = best;
      ++load[static_cast<std::size_t>(best)];
    }
  }

  // PCIe switches with at least one device of ours below.
  std::vector<int> finalIndex(n);
  for (std::size_t i = 0; i < n; ++i) finalIndex[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  for (std::size_t node = 0; node < nodes_.size(); ++node) {
    if (nodes_[node].kind != NodeKind::Bridge || !nodes_[node].isSwitch) continue;
    PciSwitch sw{nodes_[node].busId, nodes_[node].numaNode, {}};
    for (int id = 0; id < count; ++id) {
      if (devices_[id].parentNode < 0) continue;
      auto chain = ancestors(devices_[id].parentNode);
      if (std::find(chain.begin(), chain.end(), static_cast<int>(node)) != chain.end())
        sw.devices.push_back(finalIndex[static_cast<std::size_t>(id)]);
    }
    std::sort(sw.devices.begin(), sw.devices.end());
    if (!sw.devices.empty()) system.switches_.push_back(std::move(sw));
  }
  std::sort(system.switches_.begin(), system.switches_.end(),
            [](const PciSwitch& a, const PciSwitch& b) { return a.busId < b.busId; });

  // FNV-1a over what decides transports and rings: kinds, bus ids, classes,
  // and the bandwidth of each NVLink path (in MB/s, whole numbers, so that
  // no rounding of the last digit tells equal hosts apart): a ring keeps to
  // the fastest NVLink hops, so hosts whose links differ only in their
  // count order their GPUs differently.
  std::uint64_t hash = 1469598103934665603ull;
  auto mix = [&](std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
  };
  for (const auto& d : system.devices_) {
    mix(deviceKindName(d.kind));
    mix(d.busId);
    mix(d.rdma ? "r" : "-");
  }
  for (std::size_t i = 0; i < n * n; ++i) {
    mix(pathClassName(system.paths_[i].cls));
    mix(pathClassName(system.pcie_[i]));
    if (system.paths_[i].cls == PathClass::Nvl)
      mix(strCat(std::llround(system.paths_[i].bandwidthGBps * 1000), ";"));
  }
  system.fingerprint_ = hash;
  return system;
}

}  // namespace hora::topology
