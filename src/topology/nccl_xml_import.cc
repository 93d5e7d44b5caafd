#include "topology/nccl_xml_import.h"

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

// The only version of the format NCCL writes and reads (NCCL refuses any
// other, so a file of another version was not written for NCCL as we know it).
constexpr long kFormatVersion = 1;

// The values an attribute may take, and why: a value outside them can only
// come from a broken file, and read on, it would wrap or stand for an
// absurd machine.
struct IntRange {
  long minimum, maximum;
  const char* why;
};
struct RealRange {
  double maximum;  // the minimum is 0
  const char* why;
};
// Linux numbers NUMA nodes below 1024 (MAX_NUMNODES with the largest NODES_SHIFT).
constexpr IntRange kNumaIds{0, 1023, "NUMA node ids run from 0 to 1023"};
constexpr IntRange kPciClasses{0, 0xffffff, "a PCI class code has 24 bits"};
constexpr IntRange kPciVendors{0, 0xffff, "a PCI vendor id has 16 bits"};
constexpr IntRange kLinkWidths{0, 32, "a PCIe link has at most 32 lanes (0: unknown)"};
constexpr IntRange kSmVersions{0, 999, "sm is a compute capability as 10 * major + minor (0: unknown)"};
// PCIe 7 signals at 128 GT/s; twice that leaves room for the next generation.
constexpr RealRange kLinkSpeeds{256, "link_speed is in GT/s, and no PCIe link is faster than 128"};
// The fastest ports today carry 800 Gbit/s; 10 Tbit/s is far beyond any.
constexpr RealRange kNicSpeeds{1e7, "speed is in Mbit/s, and no NIC port reaches 10 Tbit/s"};

// Whether a <net> is a verbs device (InfiniBand, or RoCE and other RDMA over
// Ethernet: mlx5_0, bnxt_re0, irdma0). NCCL's dump writes each port's guid:
// its InfiniBand plugin the device's system image GUID, a 64-bit EUI-64 that
// is never 0, its socket transport the port's index (so the guid equals
// dev). The name is no guide beyond Mellanox's "mlx" (every vendor's driver
// names its devices its own way), and a file may leave the guid out.
bool isVerbsPort(const std::string& name, const std::optional<std::string>& guid,
                 const std::optional<std::string>& dev) {
  if (name.rfind("mlx", 0) == 0) return true;
  if (!guid) return false;
  char* end = nullptr;
  unsigned long long value = std::strtoull(guid->c_str(), &end, 16);
  if (end == guid->c_str() || *end != '\0' || value == 0) return false;
  if (!dev) return true;
  unsigned long long index = std::strtoull(dev->c_str(), &end, 0);
  return end == dev->c_str() || *end != '\0' || index != value;
}

// What an <nvlink> reaches, from its tclass as NCCL reads it: a GPU
// (0x03....), the CPU (0x068001, IBM POWER), and anything else, or no
// tclass, the NVSwitch fabric (NVSwitches are 0x068000).
enum class NvLinkTarget { Gpu, Cpu, Fabric };

// An <nvlink> to resolve once every GPU of the file is known.
struct PendingNvLink {
  int gpu;
  int cpuNode;
  std::string target;
  NvLinkTarget kind;
  double GBps;
  int line;
};

class NcclXmlImporter {
 public:
  NcclXmlImporter(const std::string& source, SystemBuilder& builder) : source_(source), builder_(builder) {}

  void run(const xml::Element& system) {
    if (system.name != "system") error(system, "expected <system>, found <", system.name, ">");
    checkVersion(system);
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
    // Out of long's range, strtol saturates, which every range below refuses.
    long result = std::strtol(value->c_str(), &end, 0);
    if (*end != '\0') error(e, "<", e.name, "> ", key, "=\"", *value, "\" is not a number");
    return result;
  }

  // An integer attribute that must lie in `range` when present.
  long integer(const xml::Element& e, const char* key, long fallback, const IntRange& range) const {
    long result = integer(e, key, fallback);
    if (e.attribute(key) && !e.attribute(key)->empty() && (result < range.minimum || result > range.maximum))
      error(e, "<", e.name, "> ", key, "=\"", *e.attribute(key), "\" is out of range: ", range.why);
    return result;
  }

  // A non-negative number, perhaps followed by a unit ("16 GT/s" reads as
  // 16); 0 when absent.
  double number(const xml::Element& e, const char* key, const RealRange& range) const {
    auto value = e.attribute(key);
    if (!value || value->empty()) return 0;
    char* end = nullptr;
    double result = std::strtod(value->c_str(), &end);
    if (end == value->c_str()) error(e, "<", e.name, "> ", key, "=\"", *value, "\" is not a number");
    if (!(result >= 0 && result <= range.maximum))  // NaN fails too
      error(e, "<", e.name, "> ", key, "=\"", *value, "\" is out of range: ", range.why);
    return result;
  }

  // A PCI class code as a 24-bit number (base class, subclass, programming
  // interface). Some dumps write only its leading bytes: "0x0302" or "0x03"
  // for a 3D controller, as NCCL, which matches classes by their leading
  // digits, reads them; those are widened by the bytes left out.
  unsigned long pciClass(const xml::Element& e, const char* key) const {
    auto cls = static_cast<unsigned long>(integer(e, key, 0, kPciClasses));
    const std::string text = e.attribute(key).value_or("");
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      std::size_t digits = text.size() - 2;
      if (digits == 2 || digits == 4) cls <<= 8 * (3 - digits / 2);
    }
    return cls;
  }

  double pciLinkGBps(const xml::Element& e) const {
    return pcieLinkGBps(number(e, "link_speed", kLinkSpeeds),
                        static_cast<int>(integer(e, "link_width", 0, kLinkWidths)));
  }

  void checkVersion(const xml::Element& system) const {
    auto version = system.attribute("version");
    if (!version)
      error(system, "<system> has no version attribute: NCCL's topology files say version=\"", kFormatVersion, "\"");
    if (integer(system, "version", 0) != kFormatVersion)
      error(system, "<system> version=\"", *version, "\": hora reads version ", kFormatVersion,
            " of NCCL's topology format, the only one NCCL reads");
  }

  // Only bridges hold PCI devices: NCCL reads no <pci> inside a GPU's or a
  // NIC's, so a device there would be lost without a word.
  void refuseNestedPci(const xml::Element& e, const std::string& id, const char* what) const {
    for (const auto& child : e.children)
      if (child->name == "pci")
        error(*child, "<pci> busid=\"", child->attribute("busid").value_or(""), "\" lies inside the <pci> of ", what,
              " (busid=\"", id, "\", line ", e.line, "); only PCIe switches and other bridges hold PCI devices");
  }

  // The ib transport opens NICs by name: two ports of one name would make
  // one of them unreachable and the other ambiguous.
  void claimNicName(const xml::Element& net, const std::string& name) {
    if (name.empty()) return;
    auto [first, isNew] = nicNameLines_.emplace(name, net.line);
    if (!isNew)
      error(net, "<net> name=\"", name, "\" appears twice (the first at line ", first->second,
            "): NIC names must be unique, since NICs are chosen by name");
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
    int numa = static_cast<int>(integer(e, "numaid", builder_.cpuSummary().numaNodes, kNumaIds));
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
    // NCCL requires the class: without it a device could be anything.
    required(e, "class");
    unsigned long cls = pciClass(e, "class");
    long vendor = integer(e, "vendor", -1, kPciVendors);
    double link = pciLinkGBps(e);
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
      refuseNestedPci(e, id, "a GPU");
      Device device;
      device.kind = DeviceKind::Gpu;
      device.busId = id;
      int gpu = addDevice(e, parentNode, device, link);
      for (const auto& child : e.children)
        if (child->name == "gpu") gpuLinks(*child, gpu, cpuNode);
      return;
    }
    if (base == 0x02) {
      refuseNestedPci(e, id, "a NIC");
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
        addDevice(e, parentNode, device, link);
      }
      return;
    }
    if (base == 0x06 && sub == 0x80 && vendor == 0x10de) {
      Device device;
      device.kind = DeviceKind::NvSwitch;
      device.busId = id;
      addDevice(e, parentNode, device, link);
      return;
    }
    // Anything else (storage, a bridge of another class) may still hold devices.
    bool holdsDevices = false;
    for (const auto& child : e.children) {
      if (child->name != "pci") continue;
      holdsDevices = true;
      pci(*child, parentNode, cpuNode);
    }
    if (!holdsDevices) reportIgnored(e, id, cls);
  }

  // A device hora has no use for is left out, but not silently: a class or
  // vendor read wrongly would otherwise make GPUs vanish without a word.
  void reportIgnored(const xml::Element& e, const std::string& id, unsigned long cls) const {
    const std::string written = "<pci> busid=\"" + id + "\" class=\"" + e.attribute("class").value_or("") + "\"";
    if (cls >> 16 == 0x03)
      HORA_LOG(Warn, source_, ":", e.line, ": ", written, " vendor=\"", e.attribute("vendor").value_or(""),
               "\" is a display controller not made by NVIDIA (0x10de); hora uses NVIDIA GPUs only: ignored");
    else
      HORA_LOG(Info, source_, ":", e.line, ": ", written, " is no GPU, NIC, PCIe switch or NVSwitch: ignored");
  }

  // Every device goes through here, so that a file listing more of a kind
  // than a System holds is refused at the line that goes too far.
  int addDevice(const xml::Element& e, int parentNode, Device device, double link) {
    if (builder_.countOfKind(device.kind) >= kMaxDevicesPerKind)
      error(e, tooManyDevicesText(device.kind));
    return builder_.addDevice(parentNode, std::move(device), link);
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
      claimNicName(*net, device.name);
      // NCCL names a port after its provider: verbs devices (mlx5_0,
      // bnxt_re0) come from the InfiniBand plugin, sockets from netdev
      // names (eth0). A verbs port of no known class may be InfiniBand or
      // RoCE: its RDMA flag says all that is known.
      bool verbs = isVerbsPort(device.name, net->attribute("guid"), net->attribute("dev"));
      device.rdma = infiniband || verbs;
      device.detail = infiniband ? "InfiniBand" : verbs ? "" : "Ethernet";
      if (!verbs) device.netdev = device.name;
      device.speedGbps = number(*net, "speed", kNicSpeeds) / 1000.0;  // Mbit/s in the file
      addDevice(*net, parentNode, device, link);
      ++added;
    }
    return added;
  }

  void gpuLinks(const xml::Element& gpu, int gpuId, int cpuNode) {
    int sm = static_cast<int>(integer(gpu, "sm", 0, kSmVersions));
    if (auto dev = gpu.attribute("dev")) builder_.device(gpuId).detail = "CUDA device " + *dev;
    builder_.device(gpuId).smVersion = sm;
    for (const auto& link : gpu.children) {
      if (link->name != "nvlink") continue;
      long count = integer(*link, "count", 1);
      if (count < 1 || count > kMaxNvLinkCount)
        error(*link, "<nvlink> count=\"", link->attribute("count").value_or(""), "\" must be between 1 and ",
              kMaxNvLinkCount, " links");
      pending_.push_back(PendingNvLink{gpuId, cpuNode, required(*link, "target"), nvLinkTarget(*link),
                                       static_cast<double>(count) * nvlinkGBpsPerLink(sm), link->line});
    }
  }

  // As NCCL reads tclass. A file without it (NCCL writes it, but asks the
  // host's PCI tree for it when missing) stands for a link whose far end
  // was not visible, which NCCL takes to be an NVSwitch.
  NvLinkTarget nvLinkTarget(const xml::Element& link) const {
    if (!link.attribute("tclass")) return NvLinkTarget::Fabric;
    unsigned long cls = pciClass(link, "tclass");
    if (cls >> 16 == 0x03) return NvLinkTarget::Gpu;
    if (cls == 0x068001) return NvLinkTarget::Cpu;
    return NvLinkTarget::Fabric;
  }

  // Targets: another GPU, the NVSwitch fabric (all switches form one,
  // whatever bus id the file gives them), or the GPU's CPU. A link to
  // itself says nothing.
  void resolveNvLinks() {
    int fabric = -1;
    std::map<std::pair<int, int>, double> gpuPairs;
    for (const auto& link : pending_) {
      if (link.kind == NvLinkTarget::Fabric) {
        if (fabric < 0) {
          Device nvswitch;
          nvswitch.kind = DeviceKind::NvSwitch;
          nvswitch.detail = "NVLink fabric";
          fabric = builder_.addDevice(-1, nvswitch, 0);
        }
        builder_.addNvLink(link.gpu, fabric, link.GBps);
      } else if (link.kind == NvLinkTarget::Gpu) {
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
      } else {
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
  std::map<std::string, int> nicNameLines_;  // NIC name -> line of its <net>
};

}  // namespace

void importNcclXml(const xml::Element& system, const std::string& source, SystemBuilder& builder) {
  NcclXmlImporter(source, builder).run(system);
}

}  // namespace hora::topology
