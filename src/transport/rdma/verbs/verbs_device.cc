#include "transport/rdma/verbs/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "transport/rdma/multi_rail.h"
#include "transport/rdma/verbs/fabric.h"
#include "transport/rdma/verbs/ib_settings.h"
#include "transport/rdma/verbs/verbs_queue_pair.h"

namespace hora::transport::rdma::verbs {

namespace {
// Queue depths per connection: the credit protocol keeps at most two send
// requests per slot in flight and one receive per slot.
constexpr std::size_t kSendDepth = 64;
constexpr std::size_t kReceiveDepth = 32;

std::string portName(const PortListing& port) { return strCat(port.device, ":", port.port); }
}  // namespace

std::vector<PortListing> usablePorts(const std::vector<PortListing>& listed, const HcaFilter& filter,
                                     const std::vector<std::string>& preferred, std::string& why) {
  std::vector<PortListing> usable;
  std::string filtered, inactive;
  for (const PortListing& port : listed) {
    if (!filter.allows(port.device, port.port)) {
      filtered += (filtered.empty() ? "" : ", ") + portName(port);
    } else if (!port.active) {
      inactive += (inactive.empty() ? "" : ", ") + portName(port);
    } else {
      usable.push_back(port);
    }
  }
  auto rank = [&](const PortListing& port) {
    return std::find(preferred.begin(), preferred.end(), port.device) - preferred.begin();
  };
  std::stable_sort(usable.begin(), usable.end(),
                   [&](const PortListing& a, const PortListing& b) { return rank(a) < rank(b); });
  if (usable.empty()) {
    if (listed.empty()) why = "libibverbs lists no RDMA device";
    else
      why = strCat("no port is both allowed and ACTIVE", filtered.empty() ? "" : strCat(" (left out by NCCL_IB_HCA: ", filtered, ")"),
                   inactive.empty() ? "" : strCat(" (not ACTIVE: ", inactive, ")"));
  }
  return usable;
}

std::vector<PortListing> furtherRails(const std::vector<PortListing>& usable, std::size_t opened,
                                      const std::vector<std::string>& rails) {
  std::vector<PortListing> further;
  if (opened >= usable.size()) return further;
  const PortListing& first = usable[opened];
  for (std::size_t k = opened + 1; k < usable.size(); ++k) {
    const PortListing& port = usable[k];
    const bool rail = std::find(rails.begin(), rails.end(), port.device) != rails.end();
    const bool same = port.device == first.device && port.port == first.port;
    if (rail && !same && port.linkLayer == first.linkLayer) further.push_back(port);
  }
  return further;
}

std::vector<PortListing> listPorts(const VerbsApi& api, ibv_device** devices, int count) {
  std::vector<PortListing> ports;
  for (int d = 0; d < count; ++d) {
    const char* name = api.getDeviceName(devices[d]);
    ibv_context* context = api.openDevice(devices[d]);
    if (name == nullptr || context == nullptr) continue;
    ibv_device_attr attributes{};
    if (api.queryDevice(context, &attributes) == 0) {
      for (int p = 1; p <= attributes.phys_port_cnt; ++p) {
        ibv_port_attr port{};
        if (api.queryPort(context, static_cast<std::uint8_t>(p), &port) != 0) continue;
        ports.push_back({name, p, port.state == IBV_PORT_ACTIVE,
                         port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand", devices[d]});
      }
    }
    api.closeDevice(context);
  }
  return ports;
}

std::string VerbsDevice::name() const {
  return strCat("verbs port ", port_->name, " (",
                port_->path.linkLayer == LinkLayer::Ethernet ? "RoCE" : "InfiniBand", ", GID index ",
                port_->path.gidIndex, ")");
}

topology::RankPlacement::LinkLayer VerbsDevice::linkLayer() const { return placementLayer(port_->path.linkLayer); }

std::uint64_t VerbsDevice::subnet() const { return subnetPrefix(port_->path.gid); }

bool driverRegistersDmabuf(const VerbsApi& api, ibv_pd* pd) {
  if (api.regDmabufMr == nullptr) return false;
  errno = 0;
  if (ibv_mr* made = api.regDmabufMr(pd, 0, 0, 0, -1, IBV_ACCESS_LOCAL_WRITE)) {
    api.deregMr(made);  // no driver should take descriptor -1; one that did, can
    return true;
  }
  return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT;
}

std::size_t VerbsDevice::queuePairsPerConnection() const {
  return static_cast<std::size_t>(std::max(1, port_->settings.queuePairsPerConnection));
}

std::unique_ptr<QueuePair> VerbsDevice::createQueuePair() {
  return std::make_unique<VerbsQueuePair>(port_, kSendDepth, kReceiveDepth);
}

VerbsOpening openVerbsDevice(const VerbsApi& api, const std::vector<std::string>& preferred,
                             const std::vector<std::string>& rails) {
  VerbsOpening opening;
  int count = 0;
  errno = 0;
  ibv_device** devices = api.getDeviceList(&count);
  if (devices == nullptr) {
    opening.why = strCat("ibv_get_device_list failed: ", errnoText(errno),
                         errno == ENOSYS ? " (no kernel RDMA support)" : "");
    return opening;
  }
  const std::vector<PortListing> usable =
      usablePorts(listPorts(api, devices, count), HcaFilter::fromEnvironment(), preferred, opening.why);
  const IbSettings settings = usable.empty() ? IbSettings{} : readIbSettings();
  std::string failures;
  std::size_t opened = 0;
  for (; opened < usable.size(); ++opened) {
    const PortListing& wanted = usable[opened];
    try {
      opening.device = std::make_shared<VerbsDevice>(
          openVerbsPort(api, wanted.handle, static_cast<std::uint8_t>(wanted.port), settings));
      break;
    } catch (const Error& error) {
      failures += (failures.empty() ? "" : "; ") + std::string(error.what());
    }
  }
  if (opening.device) {
    for (const PortListing& wanted : furtherRails(usable, opened, rails)) {
      try {
        auto rail = std::make_shared<VerbsDevice>(
            openVerbsPort(api, wanted.handle, static_cast<std::uint8_t>(wanted.port), settings));
        // A rail on another fabric than the first could not reach the
        // peers the first reaches.
        if (rail->linkLayer() == opening.device->linkLayer() && rail->subnet() == opening.device->subnet())
          opening.moreRails.push_back(std::move(rail));
        else
          HORA_LOG(Info, "ib: ", rail->name(), " is as near as ", opening.device->name(),
                   " but on another fabric: not a rail");
      } catch (const Error& error) {
        HORA_LOG(Info, "ib: a further rail did not open: ", error.what());
      }
    }
  }
  api.freeDeviceList(devices);
  if (!usable.empty() && !opening.device) opening.why = strCat("no usable port could be opened: ", failures);
  return opening;
}

void prepareVerbs(bool disabled, const std::vector<std::string>& preferred, const std::vector<std::string>& rails) {
  installOnce(TransportKind::Ib, disabled, [&](std::string& why) -> std::shared_ptr<Device> {
    const VerbsApi* api = loadVerbsApi(&why);
    if (api == nullptr) return nullptr;
    VerbsOpening opening = openVerbsDevice(*api, preferred, rails);
    why = opening.why;
    return combineRails(opening.device, opening.moreRails);
  });
}

}  // namespace hora::transport::rdma::verbs
