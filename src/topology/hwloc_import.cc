#include "topology/hwloc_import.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "topology/bus_id.h"

namespace hora::topology {

namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::string busIdOf(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return formatBusId(PciAddress{a.domain, a.bus, a.dev, a.func});
}

bool isNvSwitch(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return (pci->subtype != nullptr && std::strcmp(pci->subtype, "NVSwitch") == 0) ||
         (a.vendor_id == kNvidiaVendor && a.class_id == 0x0680);
}

// The NUMA node (OS index) nearest to an object: the first of its non-I/O
// ancestor's nodeset.
int numaOf(hwloc_topology_t topology, hwloc_obj_t object) {
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topology, object);
  if (anchor == nullptr || anchor->nodeset == nullptr) return 0;
  int first = hwloc_bitmap_first(anchor->nodeset);
  return first < 0 ? 0 : first;
}

class HwlocWalker {
 public:
  // `source`: the file (or "this host"), for messages.
  HwlocWalker(hwloc_topology_t topology, std::string source, SystemBuilder& builder)
      : topology_(topology), source_(std::move(source)), builder_(builder) {}

  void run() {
    summarizeCpus();
    walkNormal(hwloc_get_root_obj(topology_));
    readNvLinkDistances();
  }

 private:
  void summarizeCpus() {
    CpuSummary& cpu = builder_.cpuSummary();
    cpu.packages = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_PACKAGE);
    cpu.numaNodes = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_NUMANODE);
    cpu.cores = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_CORE);
    cpu.hardwareThreads = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_PU);
    for (int i = 0; i < cpu.numaNodes; ++i) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
      if (node == nullptr || node->cpuset == nullptr) continue;
      std::vector<int> cpus;
      for (int pu = hwloc_bitmap_first(node->cpuset); pu >= 0; pu = hwloc_bitmap_next(node->cpuset, pu))
        cpus.push_back(pu);
      builder_.setNumaCpus(static_cast<int>(node->os_index), std::move(cpus));
    }
    if (const char* arch = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topology_), "Architecture"))
      cpu.architecture = arch;
    if (hwloc_obj_t package = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_PACKAGE, 0))
      if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) cpu.model = model;
  }

  // Normal (CPU-side) objects carry the I/O trees as their io children.
  void walkNormal(hwloc_obj_t object) {
    if (object->io_arity > 0) {
      int cpu = builder_.cpuNode(numaOf(topology_, object));
      for (hwloc_obj_t child = object->io_first_child; child != nullptr; child = child->next_sibling)
        walkIo(child, cpu, 0);
    }
    for (hwloc_obj_t child = object->first_child; child != nullptr; child = child->next_sibling)
      walkNormal(child);
  }

  // `node`: the builder's tree node this I/O object hangs below.
  void walkIo(hwloc_obj_t object, int node, int bridgeDepth) {
    int below = node;
    if (object->type == HWLOC_OBJ_BRIDGE) {
      const auto& bridge = object->attr->bridge;
      if (bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
        below = builder_.addHostBridge(node);
        bridgeDepth = 0;
      } else {
        // A PCIe switch shows as its upstream port with one bridge per
        // downstream port below it. Counting from the root port (depth 1),
        // upstream ports sit at even depths, downstream ports at odd depths
        // >= 3: fold those into their switch, as `nvidia-smi topo` does.
        int depth = static_cast<int>(bridge.depth);
        if (depth == 0) depth = bridgeDepth + 1;
        if (depth >= 3 && depth % 2 == 1) {
          below = node;
        } else {
          bool isSwitch = depth >= 2;
          below = builder_.addBridge(node, busIdOf(object), isSwitch, object->attr->pcidev.linkspeed);
        }
        bridgeDepth = depth;
      }
    } else if (object->type == HWLOC_OBJ_PCI_DEVICE) {
      addPciDevice(object, node);
      return;
    } else {
      return;  // OS devices outside PCI and Misc objects carry nothing we use
    }
    for (hwloc_obj_t child = object->io_first_child; child != nullptr; child = child->next_sibling)
      walkIo(child, below, bridgeDepth);
  }

  void addPciDevice(hwloc_obj_t pci, int node) {
    const auto& a = pci->attr->pcidev;
    Device device;
    device.busId = busIdOf(pci);
    bool gpu = a.vendor_id == kNvidiaVendor && (a.class_id == 0x0302 || a.class_id == 0x0300);
    bool nic = (a.class_id >> 8) == 0x02;
    if (gpu) {
      device.kind = DeviceKind::Gpu;
    } else if (isNvSwitch(pci)) {
      device.kind = DeviceKind::NvSwitch;
    } else if (nic) {
      device.kind = DeviceKind::Nic;
      device.rdma = a.class_id == 0x0207;
      device.detail = a.class_id == 0x0207 ? "InfiniBand" : a.class_id == 0x0200 ? "Ethernet" : "network";
    } else {
      return;
    }
    std::string netdev;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE || os->name == nullptr) continue;
      switch (os->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_OPENFABRICS:
          device.name = os->name;  // the verbs device: mlx5_0
          device.rdma = true;
          break;
        case HWLOC_OBJ_OSDEV_NETWORK:
          if (netdev.empty()) netdev = os->name;  // ib0, eth0 (the first port's, on a multi-port NIC)
          break;
        default:
          if (const char* model = hwloc_obj_get_info_by_name(os, "GPUModel"))
            if (device.kind == DeviceKind::Gpu) device.detail = model;
          break;
      }
    }
    if (device.kind == DeviceKind::Nic) {
      device.netdev = netdev;
      if (device.name.empty()) device.name = netdev;
      else if (!netdev.empty()) device.detail += " (" + netdev + ")";
    }
    claimBusId(device);
    int id = builder_.addDevice(node, device, a.linkspeed);
    deviceOf_[pci] = id;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) deviceOf_[os] = id;
  }

  // A bus id addresses one PCI function, and GPUs are found by theirs: two
  // devices with one would make one of them unreachable. hwloc reads such a
  // file without a word (as the NCCL-format reader does not).
  void claimBusId(const Device& device) {
    auto [first, isNew] = kindOfBusId_.emplace(device.busId, device.kind);
    if (!isNew)
      fail(ErrorKind::InvalidArgument, source_, ": two PCI devices have bus id ", device.busId, " (a ",
           deviceKindName(first->second), " and a ", deviceKindName(device.kind), "): bus ids must be unique");
  }

  // hwloc's NVML backend exports NVLink as a bandwidth matrix (MB/s) between
  // GPU OS devices, NVSwitch PCI devices and CPU packages (POWER).
  void readNvLinkDistances() {
    unsigned count = 0;
    if (hwloc_distances_get_by_name(topology_, "NVLinkBandwidth", &count, nullptr, 0) != 0 || count == 0)
      return;
    std::vector<hwloc_distances_s*> matrices(count, nullptr);
    if (hwloc_distances_get_by_name(topology_, "NVLinkBandwidth", &count, matrices.data(), 0) != 0) return;
    for (unsigned m = 0; m < count; ++m) {
      hwloc_distances_s* d = matrices[m];
      if (d == nullptr) continue;
      const unsigned n = d->nbobjs;
      for (unsigned i = 0; i < n; ++i) {
        for (unsigned j = i + 1; j < n; ++j) {
          auto megabytes = std::max(d->values[i * n + j], d->values[j * n + i]);
          if (megabytes == 0) continue;
          addLink(d->objs[i], d->objs[j], static_cast<double>(megabytes) / 1000.0);
        }
      }
      hwloc_distances_release(topology_, d);
    }
  }

  void addLink(hwloc_obj_t x, hwloc_obj_t y, double GBps) {
    auto device = [&](hwloc_obj_t o) {
      auto found = deviceOf_.find(o);
      return found == deviceOf_.end() ? -1 : found->second;
    };
    auto isCpuSide = [](hwloc_obj_t o) { return o != nullptr && hwloc_obj_type_is_normal(o->type); };
    int dx = device(x), dy = device(y);
    if (dx >= 0 && dy >= 0) builder_.addNvLink(dx, dy, GBps);
    else if (dx >= 0 && isCpuSide(y)) builder_.addNvLinkToCpu(dx, builder_.cpuNode(numaOf(topology_, y)), GBps);
    else if (dy >= 0 && isCpuSide(x)) builder_.addNvLinkToCpu(dy, builder_.cpuNode(numaOf(topology_, x)), GBps);
  }

  hwloc_topology_t topology_;
  std::string source_;
  SystemBuilder& builder_;
  std::map<hwloc_obj_t, int> deviceOf_;
  std::map<std::string, DeviceKind> kindOfBusId_;  // of the devices added
};

}  // namespace

void importHwloc(const std::string& xmlPath, SystemBuilder& builder) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) fail(ErrorKind::System, "hwloc_topology_init failed: ", errnoText(errno));
  TopologyPtr topology(raw);
  // I/O objects (PCI devices, bridges, OS devices) are hidden unless asked for.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xmlPath.empty() && hwloc_topology_set_xml(raw, xmlPath.c_str()) != 0)
    fail(ErrorKind::InvalidArgument, "hwloc cannot read '", xmlPath, "' as hwloc XML: ", errnoText(errno));
  if (hwloc_topology_load(raw) != 0) {
    if (xmlPath.empty()) fail(ErrorKind::System, "hwloc could not read this host's topology: ", errnoText(errno));
    fail(ErrorKind::InvalidArgument, "hwloc could not load '", xmlPath, "' (", errnoText(errno),
         "): not a valid hwloc XML export (as `lstopo file.xml` writes)");
  }
  HwlocWalker(raw, xmlPath.empty() ? "hwloc (this host)" : xmlPath, builder).run();
  HORA_LOG(Trace, "topology: hwloc read ", xmlPath.empty() ? std::string("this host") : xmlPath);
}

}  // namespace hora::topology
