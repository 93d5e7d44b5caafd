#include "transport/rdma/verbs/verbs_port.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "transport/rdma/verbs/gid_choice.h"

namespace hora::transport::rdma::verbs {

namespace {

// The GID's RoCE version from sysfs, where libibverbs is too old to say
// (before rdma-core 32): "IB/RoCE v1" or "RoCE v2".
GidType gidTypeFromSysfs(const std::string& device, int port, int index) {
  std::ifstream file("/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) + "/gid_attrs/types/" +
                     std::to_string(index));
  std::string text;
  std::getline(file, text);
  return text.starts_with("RoCE v2") ? GidType::RoceV2 : GidType::RoceV1;
}

GidType gidTypeOf(std::uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_ROCE_V1: return GidType::RoceV1;
    case IBV_GID_TYPE_ROCE_V2: return GidType::RoceV2;
    default: return GidType::InfiniBand;
  }
}

std::vector<GidEntry> readGidTable(const VerbsApi& api, ibv_context* context, const std::string& device,
                                   std::uint8_t port, int length, LinkLayer layer) {
  std::vector<GidEntry> table;
  for (int index = 0; index < length; ++index) {
    GidEntry entry;
    entry.index = index;
    if (api.queryGidEntry != nullptr) {
      ibv_gid_entry raw{};
      // ENODATA: an unused slot (a table of zeros in older libraries).
      if (api.queryGidEntry(context, port, index, &raw, 0, sizeof(raw)) != 0) continue;
      std::copy(std::begin(raw.gid.raw), std::end(raw.gid.raw), entry.gid.begin());
      entry.type = gidTypeOf(raw.gid_type);
    } else {
      ibv_gid raw{};
      if (api.queryGid(context, port, index, &raw) != 0) continue;
      std::copy(std::begin(raw.raw), std::end(raw.raw), entry.gid.begin());
      entry.type = layer == LinkLayer::Ethernet ? gidTypeFromSysfs(device, port, index) : GidType::InfiniBand;
    }
    table.push_back(entry);
  }
  return table;
}

}  // namespace

VerbsPort::~VerbsPort() {
  if (pd != nullptr) api->deallocPd(pd);
  if (context != nullptr) api->closeDevice(context);
}

std::shared_ptr<VerbsPort> openVerbsPort(const VerbsApi& api, ibv_device* device, std::uint8_t portNumber,
                                         const IbSettings& settings) {
  auto port = std::make_shared<VerbsPort>();
  port->api = &api;
  port->settings = settings;
  const std::string deviceName = api.getDeviceName(device);
  port->name = strCat(deviceName, ":", static_cast<int>(portNumber));

  errno = 0;
  port->context = api.openDevice(device);
  if (port->context == nullptr) fail(ErrorKind::System, "verbs: ibv_open_device(", deviceName, ") failed: ", errnoText(errno));

  ibv_port_attr attributes{};
  if (const int result = api.queryPort(port->context, portNumber, &attributes); result != 0)
    fail(ErrorKind::System, "verbs: ibv_query_port(", port->name, ") failed: ", errnoText(result));
  if (attributes.state != IBV_PORT_ACTIVE)
    fail(ErrorKind::System, "verbs: ", port->name, " is not active (port state ", static_cast<int>(attributes.state), ")");

  LocalPath& path = port->path;
  path.port = portNumber;
  path.linkLayer = attributes.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::Ethernet : LinkLayer::InfiniBand;
  path.activeMtu = static_cast<std::uint8_t>(attributes.active_mtu);
  port->lid = attributes.lid;

  const auto table = readGidTable(api, port->context, deviceName, portNumber, attributes.gid_tbl_len, path.linkLayer);
  const GidChoice choice = chooseGid(port->name, path.linkLayer, table, settings.gidIndex);
  path.gidIndex = choice.index;
  for (const auto& entry : table)
    if (entry.index == choice.index) path.gid = entry.gid;
  HORA_LOG(Info, "verbs: ", choice.reason);

  errno = 0;
  port->pd = api.allocPd(port->context);
  if (port->pd == nullptr) fail(ErrorKind::System, "verbs: ibv_alloc_pd(", port->name, ") failed: ", errnoText(errno));
  return port;
}

}  // namespace hora::transport::rdma::verbs
