#include "report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>
#include <string_view>

#include "topology/cpu_affinity.h"
#include "topology/xml_reader.h"

namespace hora::topo_tool {

using topology::Device;
using topology::DeviceKind;
using topology::PathClass;
using topology::System;

namespace {

std::uint64_t hashHostName(const std::string& name) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string formatGBps(double GBps) {
  if (GBps <= 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(GBps < 10 ? 1 : 0) << GBps;
  return out.str();
}

// GPUs and NICs: the devices the path matrix shows.
std::vector<int> matrixDevices(const System& system) {
  auto list = system.devicesOfKind(DeviceKind::Gpu);
  auto nics = system.devicesOfKind(DeviceKind::Nic);
  list.insert(list.end(), nics.begin(), nics.end());
  return list;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Rank lists as ranges: 0-3,6.
std::string rankRanges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    if (j > i) {
      text += '-';
      text += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return text;
}

void printTable(std::ostream& out, const std::vector<std::string>& labels,
                const std::vector<std::vector<std::string>>& cells) {
  std::size_t width = 4;
  for (const auto& l : labels) width = std::max(width, l.size() + 2);
  for (const auto& row : cells)
    for (const auto& c : row) width = std::max(width, c.size() + 2);
  out << std::string(width, ' ');
  for (const auto& l : labels) out << std::setw(static_cast<int>(width)) << l;
  out << "\n";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    out << std::left << std::setw(static_cast<int>(width)) << labels[i] << std::right;
    for (const auto& c : cells[i]) out << std::setw(static_cast<int>(width)) << c;
    out << "\n";
  }
}

void printDevices(std::ostream& out, const System& system, DeviceKind kind, const char* title) {
  auto list = system.devicesOfKind(kind);
  if (list.empty()) {
    out << title << ": none\n";
    return;
  }
  out << title << " (" << list.size() << "):\n";
  std::size_t nameWidth = 6;
  for (int index : list)
    nameWidth = std::max(nameWidth, system.devices()[static_cast<std::size_t>(index)].name.size() + 2);
  for (int index : list) {
    const Device& d = system.devices()[static_cast<std::size_t>(index)];
    out << "  " << std::left << std::setw(static_cast<int>(nameWidth)) << d.name << std::setw(14)
        << (d.busId.empty() ? "-" : d.busId) << std::right;
    if (kind != DeviceKind::NvSwitch) {
      out << "NUMA " << d.numaNode;
      // The CPUs hora's threads keep to for a rank using this device.
      if (auto cpus = system.cpusNear(index); !cpus.empty()) out << " (CPUs " << topology::formatCpuList(cpus) << ")";
    }
    if (!d.detail.empty()) out << "  " << d.detail;
    if (d.smVersion > 0) out << "  sm_" << d.smVersion;
    if (d.nvlinkGBps > 0) out << "  NVLink " << formatGBps(d.nvlinkGBps) << " GB/s";
    if (kind == DeviceKind::Nic) {
      if (d.rdma) out << "  RDMA";
      if (d.speedGbps > 0) out << "  " << formatGBps(d.speedGbps) << " Gbit/s";
    }
    out << "\n";
  }
}

// A tiny JSON emitter: values are written as they come; it tracks commas.
class Json {
 public:
  explicit Json(std::ostream& out) : out_(out) {}
  Json& open(char bracket) {
    comma();
    out_ << bracket;
    first_ = true;
    return *this;
  }
  Json& close(char bracket) {
    out_ << bracket;
    first_ = false;
    return *this;
  }
  Json& key(const std::string& name) {
    comma();
    string(name);
    out_ << ":";
    first_ = true;
    return *this;
  }
  Json& value(const std::string& text) {
    comma();
    string(text);
    return *this;
  }
  Json& value(const char* text) { return value(std::string(text)); }
  Json& value(std::string_view text) { return value(std::string(text)); }
  Json& value(double number) {
    comma();
    out_ << number;
    return *this;
  }
  Json& value(int number) {
    comma();
    out_ << number;
    return *this;
  }
  Json& value(bool flag) {
    comma();
    out_ << (flag ? "true" : "false");
    return *this;
  }
  Json& null() {
    comma();
    out_ << "null";
    return *this;
  }
  template <typename T>
  Json& field(const std::string& name, const T& v) {
    key(name);
    return value(v);
  }

 private:
  void comma() {
    if (!first_) out_ << ",";
    first_ = false;
  }
  // JSON text is UTF-8 with control characters escaped. Names come from
  // files and from this host (a file name, a CPU model), so any bytes may
  // arrive: a byte that starts no well-formed UTF-8 character is written as
  // U+FFFD, the replacement character, and the output stays valid JSON.
  void string(std::string_view text) {
    out_ << '"';
    while (!text.empty()) {
      const auto c = static_cast<unsigned char>(text.front());
      const std::size_t length = topology::xml::decodeUtf8(text).length;
      if (c == '"' || c == '\\') out_ << '\\' << c;
      else if (c < 0x20 || c == 0x7f) out_ << escaped(c);
      else if (length == 0) out_ << "\\ufffd";
      else out_ << text.substr(0, length);
      text.remove_prefix(std::max<std::size_t>(length, 1));
    }
    out_ << '"';
  }
  static std::string escaped(unsigned char c) {
    char text[8];
    std::snprintf(text, sizeof text, "\\u%04x", c);
    return text;
  }
  std::ostream& out_;
  bool first_ = true;
};

// Whether any of the rank's pairs is connected by ib.
bool usesIb(const RankView& ranks, std::size_t rank) {
  const auto& row = ranks.transports[rank];
  for (std::size_t peer = 0; peer < row.size(); ++peer)
    if (peer != rank && row[peer].kind == topology::TransportKind::Ib) return true;
  return false;
}

}  // namespace

RankView simulateRanks(const System& system, const std::vector<SimulatedRank>& layout,
                       const topology::TransportPolicy& policy, const NetworkDeviceReport* network) {
  RankView view;
  const auto gpus = system.devicesOfKind(DeviceKind::Gpu);
  view.placements.resize(layout.size());
  view.hostOf.resize(layout.size());
  std::map<std::string, std::vector<int>> ranksOfHost;
  for (const auto& r : layout) ranksOfHost[r.host].push_back(r.rank);
  // As in a communicator: a rank has ib (ofi) when it opened a verbs
  // (libfabric) device, which it looks for only when its ranks span hosts
  // or that transport is forced.
  const bool spansHosts = ranksOfHost.size() > 1;
  const bool looksForIb = spansHosts || policy.forced == topology::TransportKind::Ib;
  const bool looksForOfi = spansHosts || policy.forced == topology::TransportKind::Ofi;
  for (auto& [host, ranks] : ranksOfHost) {
    std::sort(ranks.begin(), ranks.end());
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      std::string bus = gpus.empty() ? "" : system.devices()[static_cast<std::size_t>(gpus[k % gpus.size()])].busId;
      auto rank = static_cast<std::size_t>(ranks[k]);
      view.placements[rank] = topology::localPlacement(ranks[k], hashHostName(host), bus, system);
      if (network != nullptr) {
        view.placements[rank].hasInfiniband = network->ib && looksForIb;
        view.placements[rank].hasOfi = network->ofi && looksForOfi;
      }
      view.hostOf[rank] = host;
    }
  }
  const std::size_t n = layout.size();
  view.transports.assign(n, std::vector<topology::TransportChoice>(n));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (a != b)
        view.transports[a][b] = topology::chooseTransport(view.placements[a], view.placements[b], system, policy);
  view.ring = topology::ringOrder(view.placements, &system);
  return view;
}

void printText(std::ostream& out, const System& system, const NetworkDeviceReport* network, const RankView* ranks,
               bool reasons) {
  const auto& cpu = system.cpu();
  out << "Machine: " << system.source() << "\n";
  out << "CPUs: ";
  if (cpu.packages > 0) out << plural(static_cast<std::size_t>(cpu.packages), "package", "packages") << ", ";
  out << plural(static_cast<std::size_t>(cpu.numaNodes), "NUMA node", "NUMA nodes");
  if (cpu.cores > 0) out << ", " << plural(static_cast<std::size_t>(cpu.cores), "core", "cores");
  if (cpu.hardwareThreads > 0) out << ", " << cpu.hardwareThreads << " hardware threads";
  std::string about = cpu.architecture;
  if (!cpu.model.empty()) about += (about.empty() ? "" : ", ") + cpu.model;
  if (!about.empty()) out << " (" << about << ")";
  out << "\n";
  for (const auto& node : system.numaNodes())
    out << "  NUMA node " << node.osIndex << ": CPUs " << topology::formatCpuList(node.cpus) << "\n";
  out << "\n";

  printDevices(out, system, DeviceKind::Gpu, "GPUs");
  printDevices(out, system, DeviceKind::Nic, "NICs");
  const auto& switches = system.pciSwitches();
  if (switches.empty()) out << "PCIe switches: none\n";
  else out << "PCIe switches (" << switches.size() << "):\n";
  for (const auto& sw : switches) {
    out << "  " << sw.busId << "  NUMA " << sw.numaNode << " ->";
    for (int d : sw.devices) out << " " << system.devices()[static_cast<std::size_t>(d)].name;
    out << "\n";
  }
  if (!system.devicesOfKind(DeviceKind::NvSwitch).empty())
    printDevices(out, system, DeviceKind::NvSwitch, "NVSwitches");

  auto shown = matrixDevices(system);
  if (shown.size() >= 2) {
    std::vector<std::string> labels;
    for (int d : shown) labels.push_back(system.devices()[static_cast<std::size_t>(d)].name);
    std::vector<std::vector<std::string>> classes, bandwidths;
    for (int a : shown) {
      classes.emplace_back();
      bandwidths.emplace_back();
      for (int b : shown) {
        const auto& p = system.path(a, b);
        classes.back().push_back(a == b ? "X" : std::string(topology::pathClassName(p.cls)));
        bandwidths.back().push_back(a == b ? "X" : formatGBps(p.bandwidthGBps));
      }
    }
    out << "\nPaths (NVL NVLink, PIX one PCIe switch, PXB several, PHB host bridge,\n"
           "       NODE across host bridges, SYS across NUMA nodes):\n";
    printTable(out, labels, classes);
    out << "\nBandwidth estimates (GB/s):\n";
    printTable(out, labels, bandwidths);
  }
  auto gpus = system.devicesOfKind(DeviceKind::Gpu);
  if (!gpus.empty() && !system.devicesOfKind(DeviceKind::Nic).empty()) {
    out << "\nNearest NIC:\n";
    for (int g : gpus) {
      auto nic = system.nearestNic(g);
      const auto& gd = system.devices()[static_cast<std::size_t>(g)];
      const auto& nd = system.devices()[static_cast<std::size_t>(*nic)];
      const auto& p = system.path(g, *nic);
      out << "  " << gd.name << " -> " << nd.name << " (" << topology::pathClassName(p.cls) << ", "
          << formatGBps(p.bandwidthGBps) << " GB/s)\n";
    }
  }

  if (network == nullptr && ranks != nullptr && !ranks->placements.empty()) {
    out << "\nNetwork transports: not probed (the machine is not this host); its ranks are taken to have ib\n"
           "  where it has an RDMA NIC and this build of hora has the verbs transport\n";
  }
  if (network != nullptr) {
    out << "\nNetwork transports on this host:\n";
    out << "  ib:  " << network->ibDetail << "\n";
    out << "  ofi: " << (network->ofi ? "usable, " : "") << network->ofiDetail << "\n";
    out << "  GPUDirect RDMA: " << network->gpuDirectDetail << " (device data is staged through host memory)\n";
  }

  if (ranks == nullptr || ranks->placements.empty()) return;
  const std::size_t n = ranks->placements.size();
  std::map<std::string, std::vector<int>> ranksOfHost;
  for (std::size_t r = 0; r < n; ++r) ranksOfHost[ranks->hostOf[r]].push_back(static_cast<int>(r));
  out << "\nRanks: " << n << " on " << plural(ranksOfHost.size(), "host", "hosts") << " (";
  bool firstHost = true;
  for (const auto& [host, list] : ranksOfHost) {
    out << (firstHost ? "" : "; ") << host << ": " << rankRanges(list);
    firstHost = false;
  }
  out << ")\n";
  for (std::size_t r = 0; r < n; ++r) {
    const auto& p = ranks->placements[r];
    // The RDMA NICs the rank's ib connections would leave through (those
    // nearest its GPU, several as rails when they tie; ranks without one,
    // on a machine read from a file, have no CPUs of their own to go by),
    // shown only where it has some: a rank whose host cannot open a verbs
    // device, or whose pairs all take another transport, sends nothing
    // through them.
    const auto rails = usesIb(*ranks, r) ? topology::rdmaRailsNearest(system, system.findGpu(p.gpuBusId), {})
                                         : std::vector<std::string>{};
    std::string nics;
    for (const auto& name : rails) nics += (nics.empty() ? "" : " + ") + name;
    out << "  rank " << r << ": " << ranks->hostOf[r] << ", " << (p.gpuBusId.empty() ? "no GPU" : "GPU " + p.gpuBusId)
        << (rails.empty() ? (p.hasInfiniband ? ", RDMA NIC" : "")
            : rails.size() == 1 ? ", RDMA NIC " + nics
                                : ", RDMA NICs " + nics + " (" + std::to_string(rails.size()) + " rails)")
        << (p.hasOfi ? ", libfabric device" : "") << "\n";
  }
  std::vector<std::string> labels;
  for (std::size_t r = 0; r < n; ++r) labels.push_back(std::to_string(r));
  std::vector<std::vector<std::string>> cells(n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      cells[a].push_back(a == b ? "-" : std::string(topology::transportName(ranks->transports[a][b].kind)));
  out << "\nTransports:\n";
  printTable(out, labels, cells);
  if (reasons) {
    out << "\nWhy:\n";
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b)
        out << "  " << a << " <-> " << b << ": " << topology::transportName(ranks->transports[a][b].kind) << " ("
            << ranks->transports[a][b].reason << ")\n";
  }
  out << "\nRing:";
  for (int r : ranks->ring) out << " " << r;
  out << "\n";
}

void printJson(std::ostream& out, const System& system, const NetworkDeviceReport* network, const RankView* ranks) {
  Json json(out);
  json.open('{');
  json.field("source", system.source());
  const auto& cpu = system.cpu();
  json.key("cpu").open('{')
      .field("packages", cpu.packages)
      .field("numaNodes", cpu.numaNodes)
      .field("cores", cpu.cores)
      .field("hardwareThreads", cpu.hardwareThreads)
      .field("architecture", cpu.architecture)
      .field("model", cpu.model)
      .close('}');
  json.key("devices").open('[');
  for (std::size_t i = 0; i < system.devices().size(); ++i) {
    const Device& d = system.devices()[i];
    json.open('{').field("index", static_cast<int>(i)).field("kind", topology::deviceKindName(d.kind))
        .field("name", d.name).field("busId", d.busId).field("numaNode", d.numaNode).field("detail", d.detail)
        .field("cpus", topology::formatCpuList(system.cpusNear(static_cast<int>(i))));
    if (d.kind == DeviceKind::Gpu) json.field("smVersion", d.smVersion).field("nvlinkGBps", d.nvlinkGBps);
    if (d.kind == DeviceKind::Nic) json.field("rdma", d.rdma).field("speedGbps", d.speedGbps);
    if (d.kind == DeviceKind::Gpu) {
      json.key("nearestNic");
      if (auto nic = system.nearestNic(static_cast<int>(i)))
        json.value(system.devices()[static_cast<std::size_t>(*nic)].name);
      else json.null();
    }
    json.close('}');
  }
  json.close(']');
  json.key("pciSwitches").open('[');
  for (const auto& sw : system.pciSwitches()) {
    json.open('{').field("busId", sw.busId).field("numaNode", sw.numaNode).key("devices").open('[');
    for (int d : sw.devices) json.value(system.devices()[static_cast<std::size_t>(d)].name);
    json.close(']').close('}');
  }
  json.close(']');
  // paths[i][j] between devices[i] and devices[j].
  json.key("paths").open('[');
  for (std::size_t a = 0; a < system.devices().size(); ++a) {
    json.open('[');
    for (std::size_t b = 0; b < system.devices().size(); ++b) {
      const auto& p = system.path(static_cast<int>(a), static_cast<int>(b));
      json.open('{').field("class", topology::pathClassName(p.cls)).field("GBps", p.bandwidthGBps).close('}');
    }
    json.close(']');
  }
  json.close(']');
  json.field("fingerprint", std::to_string(system.fingerprint()));
  if (network != nullptr) {
    json.key("network").open('{')
        .field("ib", network->ib).field("ibDetail", network->ibDetail)
        .field("ofi", network->ofi).field("ofiDetail", network->ofiDetail)
        .field("gpuDirectDetail", network->gpuDirectDetail)
        .close('}');
  }
  if (ranks != nullptr && !ranks->placements.empty()) {
    const std::size_t n = ranks->placements.size();
    json.key("ranks").open('[');
    for (std::size_t r = 0; r < n; ++r) {
      const auto& p = ranks->placements[r];
      json.open('{').field("rank", static_cast<int>(r)).field("host", ranks->hostOf[r]).field("gpuBusId", p.gpuBusId)
          .field("hasInfiniband", p.hasInfiniband).field("hasOfi", p.hasOfi).close('}');
    }
    json.close(']');
    json.key("transports").open('[');
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        const auto& t = ranks->transports[a][b];
        json.open('{').field("a", static_cast<int>(a)).field("b", static_cast<int>(b))
            .field("transport", topology::transportName(t.kind)).field("reason", t.reason).close('}');
      }
    json.close(']');
    json.key("ring").open('[');
    for (int r : ranks->ring) json.value(r);
    json.close(']');
  }
  json.close('}');
  out << "\n";
}

}  // namespace hora::topo_tool
