#include "topology/nccl_xml_import.h"

#include <bit>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "topology/bus_id.h"
#include "topology/cpu_affinity.h"

namespace hora::topology {

namespace {

// The most links one <nvlink> element may count. No NVLink generation has
// given a GPU more than 18 links in all (NVLink 4 and 5), so a count far
// above that can only come from a broken file; 64 leaves room for the next
// generations and still stops a count that would read as an absurd bandwidth.
constexpr long kMaxNvLinkCount = 64;

// An <nvlink> to resolve once every GPU of the file is known.
struct PendingNvLink {
  int gpu;
  int cpuNode;
  std::string target;
  unsigned long targetClass;
  double GBps;
  int line;
};

class NcclXmlImporter {
 public:
  NcclXmlImporter(const std::string& source, SystemBuilder& builder) : source_(source), builder_(builder) {}

  void run(const xml::Element& system) {
    if (system.name != "system") error(system, "expected <system>, found <", system.name, ">");
    CpuSummary& summary = builder_.cpuSummary();
    for (const auto& child : system.children) {
      if (child->name != "cpu") continue;  // unknown elements are left for newer formats
      cpu(*child);
      ++summary.numaNodes;
    }
    // The format has one <cpu> per NUMA node and says nothing of sockets or
    // cores: packages and cores stay 0 (unknown).
    resolveNvLinks();
  }

 private:
  template <typename... Parts>
  [[noreturn]] void error(const xml::Element& at, const Parts&... parts) const {
    fail(ErrorKind::InvalidArgument, source_, ":", at.line, ": ", parts...);
  }

  std::string required(const xml::Element& e, const char* key) const {
    auto value = e.attribute(key);
    if (!value || value->empty()) error(e, "<", e.name, "> has no ", key, " attribute");
    return *value;
  }

  long integer(const xml::Element& e, const char* key, long fallback) const {
    auto value = e.attribute(key);
    if (!value || value->empty()) return fallback;
    char* end = nullptr;
    long result = std::strtol(value->c_str(), &end, 0);
    if (*end != '\0') error(e, "<", e.name, "> ", key, "=\"", *value, "\" is not a number");
    return result;
  }

  double number(const xml::Element& e, const char* key) const {
    auto value = e.attribute(key);
    if (!value || value->empty()) return 0;
    char* end = nullptr;
    double result = std::strtod(value->c_str(), &end);
    if (end == value->c_str()) error(e, "<", e.name, "> ", key, "=\"", *value, "\" is not a number");
    return result;  // "16 GT/s" reads as 16: the unit may follow
  }

  std::string busId(const xml::Element& e, const std::string& text) const {
    auto canonical = canonicalBusId(text);
    if (!canonical) error(e, "<", e.name, "> has \"", text, "\", which is not a PCI bus id");
    return *canonical;
  }

  // Each NUMA node has one <cpu>: a second one would merge into the first,
  // its CPUs replacing the first's.
  void claimNumaNode(const xml::Element& e, int numa) {
    auto [first, isNew] = numaLines_.emplace(numa, e.line);
    if (!isNew)
      error(e, "a second <cpu> of NUMA node ", numa, " (the first is at line ", first->second,
            "): each <cpu> needs a numaid of its own");
  }

  // A bus id addresses one PCI function: two elements with the same one
  // would list one device twice.
  void claimBusId(const xml::Element& e, const std::string& id) {
    auto [first, isNew] = busIdLines_.emplace(id, e.line);
    if (!isNew)
      error(e, "<", e.name, "> busid=\"", id, "\" appears twice (the first at line ", first->second,
            "): bus ids must be unique");
  }

  void cpu(const xml::Element& e) {
    int numa = static_cast<int>(integer(e, "numaid", builder_.cpuSummary().numaNodes));
    claimNumaNode(e, numa);
    int node = builder_.cpuNode(numa);
    CpuSummary& summary = builder_.cpuSummary();
    if (auto arch = e.attribute("arch"); arch && summary.architecture.empty()) summary.architecture = *arch;
    if (auto vendor = e.attribute("vendor"); vendor && summary.model.empty()) summary.model = *vendor;
    // affinity="0000ffff,ffffffff": the node's CPUs as a mask of 32-bit hex words.
    if (auto mask = e.attribute("affinity"); mask && !mask->empty()) {
      std::vector<int> cpus;
      try {
        cpus = parseCpuMask(*mask);
      } catch (const Error&) {
        error(e, "<cpu> affinity=\"", *mask, "\" is not a hex CPU mask");
      }
      summary.hardwareThreads += static_cast<int>(cpus.size());
      builder_.setNumaCpus(numa, std::move(cpus));
    }
    for (const auto& child : e.children) {
      if (child->name == "pci") pci(*child, node, node);
      else if (child->name == "nic") nics(*child, node, "", false, 0);
    }
  }

  void pci(const xml::Element& e, int parentNode, int cpuNode) {
    std::string id = busId(e, required(e, "busid"));
    claimBusId(e, id);
    unsigned long cls = static_cast<unsigned long>(integer(e, "class", 0));
    long vendor = integer(e, "vendor", -1);
    double link = pcieLinkGBps(number(e, "link_speed"), static_cast<int>(integer(e, "link_width", 0)));
    unsigned long base = cls >> 16, sub = (cls >> 8) & 0xff;

    if (base == 0x06 && sub == 0x04) {  // a PCIe switch, flattened to one element
      int node = builder_.addBridge(parentNode, id, true, link);
      for (const auto& child : e.children) {
        if (child->name == "pci") pci(*child, node, cpuNode);
        else if (child->name == "nic") nics(*child, node, "", false, link);
      }
      return;
    }
    if (base == 0x03 && (vendor < 0 || vendor == 0x10de)) {
      Device device;
      device.kind = DeviceKind::Gpu;
      device.busId = id;
      int gpu = builder_.addDevice(parentNode, device, link);
      for (const auto& child : e.children)
        if (child->name == "gpu") gpuLinks(*child, gpu, cpuNode);
      return;
    }
    if (base == 0x02) {
      bool infiniband = sub == 0x07;
      bool any = false;
      for (const auto& child : e.children)
        if (child->name == "nic") any |= nics(*child, parentNode, id, infiniband, link) > 0;
      if (!any) {
        Device device;
        device.kind = DeviceKind::Nic;
        device.busId = id;
        device.rdma = infiniband;
        device.detail = infiniband ? "InfiniBand" : "Ethernet";
        builder_.addDevice(parentNode, device, link);
      }
      return;
    }
    if (base == 0x06 && sub == 0x80 && vendor == 0x10de) {
      Device device;
      device.kind = DeviceKind::NvSwitch;
      device.busId = id;
      builder_.addDevice(parentNode, device, link);
      return;
    }
    // Anything else (storage, a bridge of another class) may still hold devices.
    for (const auto& child : e.children)
      if (child->name == "pci") pci(*child, parentNode, cpuNode);
  }

  // <nic><net name=... speed=.../></nic>: one NIC per port. Returns how many.
  int nics(const xml::Element& nic, int parentNode, const std::string& busId, bool infiniband, double link) {
    int added = 0;
    for (const auto& net : nic.children) {
      if (net->name != "net") continue;
      Device device;
      device.kind = DeviceKind::Nic;
      device.busId = busId;
      device.name = net->attribute("name").value_or("");
      // NCCL names a port after its provider: verbs devices (mlx5_0) come
      // from the InfiniBand plugin, sockets from netdev names (eth0).
      bool verbsName = device.name.rfind("mlx", 0) == 0;
      device.rdma = infiniband || verbsName;
      device.detail = infiniband ? "InfiniBand" : verbsName ? "RDMA" : "Ethernet";
      device.speedGbps = number(*net, "speed") / 1000.0;  // Mbit/s in the file
      builder_.addDevice(parentNode, device, link);
      ++added;
    }
    return added;
  }

  void gpuLinks(const xml::Element& gpu, int gpuId, int cpuNode) {
    int sm = static_cast<int>(integer(gpu, "sm", 0));
    if (auto dev = gpu.attribute("dev")) builder_.device(gpuId).detail = "CUDA device " + *dev;
    builder_.device(gpuId).smVersion = sm;
    for (const auto& link : gpu.children) {
      if (link->name != "nvlink") continue;
      long count = integer(*link, "count", 1);
      if (count < 1 || count > kMaxNvLinkCount)
        error(*link, "<nvlink> count=\"", link->attribute("count").value_or(""), "\" must be between 1 and ",
              kMaxNvLinkCount, " links");
      pending_.push_back(PendingNvLink{gpuId, cpuNode, required(*link, "target"),
                                       static_cast<unsigned long>(integer(*link, "tclass", 0)),
                                       static_cast<double>(count) * nvlinkGBpsPerLink(sm), link->line});
    }
  }

  // Targets: another GPU (tclass 0x03....), an NVSwitch (0x068000; all
  // switches form one fabric, whatever bus id the file gives them), or the
  // GPU's CPU (0x06...., POWER). A link to itself says nothing.
  void resolveNvLinks() {
    int fabric = -1;
    std::map<std::pair<int, int>, double> gpuPairs;
    for (const auto& link : pending_) {
      unsigned long base = link.targetClass >> 16, sub = (link.targetClass >> 8) & 0xff;
      if (base == 0x06 && sub == 0x80) {
        if (fabric < 0) {
          Device nvswitch;
          nvswitch.kind = DeviceKind::NvSwitch;
          nvswitch.detail = "NVLink fabric";
          fabric = builder_.addDevice(-1, nvswitch, 0);
        }
        builder_.addNvLink(link.gpu, fabric, link.GBps);
      } else if (base == 0x03) {
        auto target = canonicalBusId(link.target);
        if (!target)
          fail(ErrorKind::InvalidArgument, source_, ":", link.line, ": <nvlink> target=\"", link.target,
               "\" is not a PCI bus id");
        if (*target == builder_.device(link.gpu).busId) continue;
        int other = builder_.findDevice(*target, DeviceKind::Gpu);
        if (other < 0) {
          HORA_LOG(Warn, source_, ":", link.line, ": <nvlink> to ", *target, ", a GPU not in the file; ignored");
          continue;
        }
        // Both ends usually list the same links: count them once.
        auto key = std::make_pair(std::min(link.gpu, other), std::max(link.gpu, other));
        gpuPairs[key] = std::max(gpuPairs[key], link.GBps);
      } else if (base == 0x06) {
        builder_.addNvLinkToCpu(link.gpu, link.cpuNode, link.GBps);
      }
    }
    for (const auto& [pair, GBps] : gpuPairs) builder_.addNvLink(pair.first, pair.second, GBps);
  }

  const std::string& source_;
  SystemBuilder& builder_;
  std::vector<PendingNvLink> pending_;
  std::map<int, int> numaLines_;           // NUMA node -> line of its <cpu>
  std::map<std::string, int> busIdLines_;  // bus id -> line of its <pci>
};

}  // namespace

void importNcclXml(const xml::Element& system, const std::string& source, SystemBuilder& builder) {
  NcclXmlImporter(source, builder).run(system);
}

}  // namespace hora::topology
