// Builds a System from what an importer finds (hwloc, NCCL XML, NVML):
// a tree of CPUs (NUMA nodes), host bridges, PCIe bridges and devices, and
// an NVLink graph. build() derives every path class and bandwidth estimate,
// so importers only describe, and the rules live in one place.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace hora::topology {

// Estimates used where a description gives no number (GB/s, one direction).
inline constexpr double kDefaultPcieGBps = 15.75;     // PCIe gen3 x16
inline constexpr double kSmpInterconnectGBps = 10.0;  // between sockets (UPI/xGMI class)

// PCIe link bandwidth in GB/s from a transfer rate and a width: 8b/10b
// encoding up to 5 GT/s, 128b/130b from 8 GT/s.
double pcieLinkGBps(double gigaTransfersPerSecond, int width);

// NVLink bandwidth of one link (per direction) for a GPU architecture
// (compute capability major*10+minor, e.g. 80); 0 = unknown architecture.
double nvlinkGBpsPerLink(int smVersion);

// Total NVLink bandwidth of a GPU attached to an NVSwitch fabric, by
// architecture; used for LoadOptions::assumeNvSwitch.
double nvswitchGBpsPerGpu(int smVersion);

// The most devices of one kind (GPUs, NICs, NVSwitches) a System holds, as
// NCCL's topology holds at most 640 nodes of a type. Machines have a few
// dozen; the paths between every two devices grow with the square of their
// count, so a file listing thousands would take minutes and gigabytes.
inline constexpr int kMaxDevicesPerKind = 640;
// Why a device beyond kMaxDevicesPerKind is refused ("more than 640 GPUs: ...").
std::string tooManyDevicesText(DeviceKind kind);

class SystemBuilder {
 public:
  explicit SystemBuilder(std::string source);

  CpuSummary& cpuSummary() { return cpu_; }

  // The CPUs of a NUMA node (OS indices), where the description lists them.
  void setNumaCpus(int numaNode, std::vector<int> cpus) { numaCpus_[numaNode] = std::move(cpus); }

  // Tree nodes. A CPU node stands for a NUMA node (one per OS index).
  int cpuNode(int numaNode);
  int addHostBridge(int cpuNode);
  // A PCIe bridge level. isSwitch: a PCIe switch (its upstream port, with its
  // downstream ports folded in); false: a root port of the host bridge.
  int addBridge(int parentNode, std::string busId, bool isSwitch, double linkGBps);

  // A device below parentNode (a CPU node for NICs known only by name; -1
  // for an NVSwitch fabric seen only through NVLink). linkGBps: its PCIe
  // link; 0 = unknown. Returns the device's id for addNvLink. Throws
  // hora::Error(InvalidArgument) beyond kMaxDevicesPerKind of its kind.
  int addDevice(int parentNode, Device device, double linkGBps);
  int deviceCount() const { return static_cast<int>(devices_.size()); }
  int countOfKind(DeviceKind kind) const { return perKind_[static_cast<std::size_t>(kind)]; }
  const Device& device(int id) const { return devices_[static_cast<std::size_t>(id)].device; }
  Device& device(int id) { return devices_[static_cast<std::size_t>(id)].device; }
  // The device with this canonical bus id and kind, or -1.
  int findDevice(const std::string& busId, DeviceKind kind) const;

  // NVLink between two devices (GPU or NVSwitch) or from a GPU to its CPU
  // (POWER); bandwidths of repeated calls add up.
  void addNvLink(int deviceA, int deviceB, double GBps);
  void addNvLinkToCpu(int device, int cpuNode, double GBps);
  bool hasNvLinks(int device) const;

  // Joins every GPU that has no NVLink yet to one NVSwitch fabric
  // (LoadOptions::assumeNvSwitch), at nvswitchGBpsPerGpu() of its architecture.
  void attachAllGpusToNvSwitchFabric();

  System build();

 private:
  enum class NodeKind { Cpu, HostBridge, Bridge };
  struct Node {
    NodeKind kind;
    int parent;  // -1 for CPU nodes
    int cpu;     // the CPU node above (itself for a CPU node)
    int numaNode;
    std::string busId;
    bool isSwitch = false;
    double linkGBps = 0;
  };
  struct PendingDevice {
    Device device;
    int parentNode;
    double linkGBps;
  };
  // An NVLink graph vertex is a device id, or -(cpuNode+1) for a CPU.
  struct NvLinkEdge {
    int a, b;
    double GBps;
  };

  PathClass pcieClass(int nodeA, int nodeB) const;
  double pcieBandwidth(int deviceA, int deviceB) const;
  // `fabric`: fabricGBps(), computed once for every pair's path.
  Path nvlinkPath(int deviceA, int deviceB, const std::vector<double>& fabric) const;
  // Each device's NVLink bandwidth into the NVSwitch fabric (0: none).
  std::vector<double> fabricGBps() const;
  std::vector<int> ancestors(int node) const;  // node first, CPU last

  std::string source_;
  CpuSummary cpu_;
  std::vector<Node> nodes_;
  std::map<int, int> cpuByNuma_;
  std::map<int, std::vector<int>> numaCpus_;
  std::vector<PendingDevice> devices_;
  std::array<int, 3> perKind_{};  // devices of each DeviceKind
  std::vector<NvLinkEdge> nvlinks_;
  // Each pair of vertices (smaller first) -> its edge in nvlinks_: files may
  // list NVLinks among hundreds of GPUs, and a scan per link would take minutes.
  std::map<std::pair<int, int>, std::size_t> nvlinkIndex_;
};

}  // namespace hora::topology
