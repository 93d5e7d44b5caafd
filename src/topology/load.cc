// Where a System comes from: this host (hwloc + NVML) or a file.
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "topology/hwloc_import.h"
#include "topology/nccl_xml_import.h"
#include "topology/nvml_links.h"
#include "topology/topology.h"
#include "topology/xml_reader.h"

namespace hora::topology {

namespace {

// The largest file read. The hwloc export of a many-socket server with
// thousands of hardware threads runs to some megabytes (every object carries
// its CPU sets), so this leaves ample room; without a limit, a wrong path
// (/dev/zero, a disk image) would be read until memory runs out.
constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

[[noreturn]] void failTooLarge(const std::string& path) {
  fail(ErrorKind::InvalidArgument, "topology file '", path, "' is larger than ", kMaxFileBytes >> 20,
       " MiB, which no machine description comes near: is it the right file?");
}

std::string readWholeFile(const std::string& path) {
  // A directory opens as a stream that reads as empty: say what it is,
  // rather than that the "file" holds no XML.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    fail(ErrorKind::System, "cannot read topology file '", path, "': ", errnoText(EISDIR));
  // A regular file says its size; anything else (a device, a pipe) is
  // measured as it is read.
  if (std::filesystem::is_regular_file(path, ignored) && std::filesystem::file_size(path, ignored) > kMaxFileBytes)
    failTooLarge(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::System, "cannot read topology file '", path, "': ", errnoText(errno));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) failTooLarge(path);
  }
  if (in.bad()) fail(ErrorKind::System, "error reading topology file '", path, "': ", errnoText(errno));
  return text;
}

// Recognises the format by the root element, then imports it.
SystemBuilder builderFromFile(const std::string& path) {
  std::string text = readWholeFile(path);
  auto root = xml::parse(text, path);
  if (root->name == "topology") {
    SystemBuilder builder(path + " (hwloc XML)");
    importHwloc(path, builder);
    return builder;
  }
  if (root->name == "system") {
    SystemBuilder builder(path + " (NCCL topology XML)");
    importNcclXml(*root, path, builder);
    return builder;
  }
  if (root->name == "graphs")
    fail(ErrorKind::InvalidArgument, "'", path,
         "' holds NCCL ring/tree graphs (the NCCL_GRAPH_FILE format), not a machine; give hwloc XML "
         "(<topology>, from lstopo) or NCCL topology XML (<system>, the NCCL_TOPO_FILE format)");
  fail(ErrorKind::InvalidArgument, "'", path, "' is no machine description hora knows: its root element is <",
       root->name, ">, expected <topology> (hwloc XML) or <system> (NCCL topology XML)");
}

void addNvml(SystemBuilder& builder) {
  std::string problem = addNvLinksFromNvml(builder);
  if (!problem.empty()) HORA_LOG(Info, "topology: NVLink from NVML not available: ", problem);
}

System finish(SystemBuilder& builder, const LoadOptions& options) {
  if (options.assumeNvSwitch) builder.attachAllGpusToNvSwitchFabric();
  System system = builder.build();
  if (log::enabled(log::Level::Info)) {
    auto gpus = system.devicesOfKind(DeviceKind::Gpu);
    auto nics = system.devicesOfKind(DeviceKind::Nic);
    int nvlinked = 0;
    for (int g : gpus) nvlinked += system.devices()[g].nvlinkGBps > 0;
    HORA_LOG(Info, "topology: ", system.source(), ": ", gpus.size(), " GPU(s) (", nvlinked, " with NVLink), ",
             nics.size(), " NIC(s)", system.hasRdmaNic() ? " incl. RDMA" : "");
  }
  return system;
}

}  // namespace

System discoverLocalSystem(const LoadOptions& options) {
  SystemBuilder builder("hwloc (this host)");
  importHwloc("", builder);
  addNvml(builder);
  return finish(builder, options);
}

System loadSystemFromFile(const std::string& path, const LoadOptions& options) {
  SystemBuilder builder = builderFromFile(path);
  return finish(builder, options);
}

System loadSystem() {
  // Scripts written for NCCL may ask for a dump of the topology and expect a
  // file to appear: say at once that none will.
  if (auto dump = env::get({"NCCL_TOPO_DUMP_FILE"}))
    HORA_LOG(Warn, "topology: NCCL_TOPO_DUMP_FILE=", *dump,
             " is not read by hora and no file is written; `hora-topo` shows the machine as hora sees it, "
             "and `lstopo FILE.xml` writes a description HORA_TOPO_FILE reads back");
  LoadOptions options;
  options.assumeNvSwitch = env::getInt({"HORA_TOPO_NVSWITCH"}, 0) != 0;
  auto file = env::get({"HORA_TOPO_FILE", "NCCL_TOPO_FILE"});
  if (!file) return discoverLocalSystem(options);
  SystemBuilder builder = builderFromFile(*file);
  addNvml(builder);  // the driver knows NVLinks a partial file leaves out
  return finish(builder, options);
}

}  // namespace hora::topology
