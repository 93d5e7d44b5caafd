#include "transport/rdma/network_devices.h"

#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "hora_config.h"
#include "transport/rdma/device.h"
#include "transport/rdma/gpu_direct.h"
#if HORA_HAVE_OFI
#include "transport/rdma/ofi/ofi_device.h"
#endif
#if HORA_HAVE_IBVERBS
#include "transport/rdma/verbs/verbs_device.h"
#endif

namespace hora::transport::rdma {

void prepareNetworkDevices(const topology::TransportPolicy& policy, const RankNetworkView& rank) {
  const bool spansHosts = rank.spansHosts;
  const bool ibForced = policy.forced == TransportKind::Ib;
#if HORA_HAVE_IBVERBS
  if (ibForced || spansHosts) verbs::prepareVerbs(policy.ibDisabled, rank.nicsNearest, rank.railsNearest);
#else
  (void)ibForced;
#endif
  const bool ofiForced = policy.forced == TransportKind::Ofi;
#if HORA_HAVE_OFI
  if (ofiForced || spansHosts) ofi::prepareOfi(ofiForced, policy.ofiDisabled, rank.interfaceName, rank.railsNearest,
                                                rank.nicsNearest);
#else
  (void)spansHosts;
  static std::once_flag once;
  if (ofiForced)
    std::call_once(once, [] { HORA_LOG(Info, "ofi: this build of hora has no libfabric transport"); });
#endif
}

NetworkDeviceReport probeNetworkDevices(const topology::TransportPolicy& policy) {
  NetworkDeviceReport report;
  if (policy.ibDisabled) {
    report.ibDetail = strCat("disabled (", disabledBy(TransportKind::Ib), ")");
  } else {
#if HORA_HAVE_IBVERBS
    std::string why;
    if (const verbs::VerbsApi* api = verbs::loadVerbsApi(&why)) {
      verbs::VerbsOpening opening = verbs::openVerbsDevice(*api, {});
      report.ib = opening.device != nullptr;
      report.ibDetail = report.ib ? opening.device->name() : strCat("not available: ", opening.why);
    } else {
      report.ibDetail = strCat("not available: ", why);
    }
#else
    report.ibDetail = "not available: this build of hora has no verbs transport";
#endif
  }
  const bool ofiForced = policy.forced == TransportKind::Ofi;
#if HORA_HAVE_OFI
  if (policy.ofiDisabled) {
    report.ofiDetail = strCat("disabled (", disabledBy(TransportKind::Ofi), ")");
  } else {
    ofi::OfiOpening opening = ofi::openOfiDevice(/*allowSoftware=*/ofiForced);
    report.ofi = opening.device != nullptr;
    report.ofiDetail = report.ofi ? opening.device->name() : strCat("not available: ", opening.why);
  }
#else
  (void)ofiForced;
  report.ofiDetail = "not available: this build of hora has no libfabric transport";
#endif
  report.gpuDirectDetail = describeGpuDirect(gpuDirectFactsOfHost());
  return report;
}

}  // namespace hora::transport::rdma
