#include <algorithm>
#include <array>
#include <cctype>

#include "base/error.h"
#include "topology/bus_id.h"
#include "topology/topology.h"

namespace hora::topology {

namespace {
constexpr std::array<std::string_view, 8> kPathClassNames = {"LOC", "NVL", "PIX", "PXB",
                                                             "PHB", "NODE", "SYS", "NET"};
}

std::string_view pathClassName(PathClass cls) { return kPathClassNames[static_cast<std::size_t>(cls)]; }

std::optional<PathClass> parsePathClass(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < kPathClassNames.size(); ++i)
    if (kPathClassNames[i] == upper) return static_cast<PathClass>(i);
  return std::nullopt;
}

std::string_view deviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu: return "GPU";
    case DeviceKind::Nic: return "NIC";
    case DeviceKind::NvSwitch: return "NVSwitch";
  }
  return "?";
}

std::vector<int> System::devicesOfKind(DeviceKind kind) const {
  std::vector<int> result;
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].kind == kind) result.push_back(static_cast<int>(i));
  return result;
}

std::vector<int> System::cpusNear(int device) const {
  const int node = devices_.at(static_cast<std::size_t>(device)).numaNode;
  for (const NumaNode& numa : numa_)
    if (numa.osIndex == node) return numa.cpus;
  return {};
}

std::optional<int> System::findGpu(std::string_view busId) const {
  auto canonical = canonicalBusId(busId);
  if (!canonical) return std::nullopt;
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].kind == DeviceKind::Gpu && devices_[i].busId == *canonical) return static_cast<int>(i);
  return std::nullopt;
}

std::optional<int> System::findNicByInterface(std::string_view interfaceName) const {
  if (interfaceName.empty()) return std::nullopt;
  // A NIC known only by its interface (a socket NIC, or one a file names so)
  // carries that name too.
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (d.kind == DeviceKind::Nic && (d.netdev == interfaceName || (d.netdev.empty() && d.name == interfaceName)))
      return static_cast<int>(i);
  }
  return std::nullopt;
}

const Path& System::path(int from, int to) const {
  const auto n = devices_.size();
  HORA_ENFORCE(from >= 0 && to >= 0 && static_cast<std::size_t>(from) < n && static_cast<std::size_t>(to) < n,
               "device indices ", from, ", ", to, " of ", n);
  return paths_[static_cast<std::size_t>(from) * n + static_cast<std::size_t>(to)];
}

PathClass System::pciePathBetween(int from, int to) const {
  path(from, to);  // checks the indices
  return pcie_[static_cast<std::size_t>(from) * devices_.size() + static_cast<std::size_t>(to)];
}

std::optional<int> System::nearestNic(int gpu) const {
  if (gpu < 0 || static_cast<std::size_t>(gpu) >= nearestNic_.size() || nearestNic_[gpu] < 0)
    return std::nullopt;
  return nearestNic_[gpu];
}

bool System::hasRdmaNic() const {
  return std::any_of(devices_.begin(), devices_.end(),
                     [](const Device& d) { return d.kind == DeviceKind::Nic && d.rdma; });
}

}  // namespace hora::topology
