#include "transport/rdma/network_devices.h"

#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "hora_config.h"
#include "transport/rdma/device.h"
#include "transport/rdma/verbs_probe.h"
#if HORA_HAVE_OFI
#include "transport/rdma/ofi/ofi_device.h"
#endif

namespace hora::transport::rdma {

void prepareNetworkDevices(const topology::TransportPolicy& policy, bool spansHosts,
                           const std::string& interfaceName) {
  const bool ofiForced = policy.forced == TransportKind::Ofi;
#if HORA_HAVE_OFI
  if (ofiForced || spansHosts) ofi::prepareOfi(ofiForced, policy.ofiDisabled, interfaceName);
#else
  (void)spansHosts;
  (void)interfaceName;
  static std::once_flag once;
  if (ofiForced)
    std::call_once(once, [] { HORA_LOG(Info, "ofi: this build of hora has no libfabric transport"); });
#endif
}

NetworkDeviceReport probeNetworkDevices(const topology::TransportPolicy& policy) {
  NetworkDeviceReport report;
  const VerbsProbe verbs = probeVerbs();
  if (policy.ibDisabled) {
    report.ibDetail = "disabled (IB_DISABLE or NET)";
  } else if (verbs.devices.empty()) {
    report.ibDetail = strCat("not available: ", verbs.why);
  } else {
    std::string names;
    for (const auto& device : verbs.devices) names += (names.empty() ? "" : ", ") + device;
    report.ibDetail = strCat("found ", names, "; the verbs backend is not in use yet, so tcp carries these pairs");
  }
  const bool ofiForced = policy.forced == TransportKind::Ofi;
#if HORA_HAVE_OFI
  if (policy.ofiDisabled) {
    report.ofiDetail = "disabled (HORA_OFI_DISABLE or NET)";
  } else {
    ofi::OfiOpening opening = ofi::openOfiDevice(/*allowSoftware=*/ofiForced);
    report.ofi = opening.device != nullptr;
    report.ofiDetail = report.ofi ? opening.device->name() : strCat("not available: ", opening.why);
  }
#else
  (void)ofiForced;
  report.ofiDetail = "not available: this build of hora has no libfabric transport";
#endif
  return report;
}

}  // namespace hora::transport::rdma
