#include "transport/rdma/network_devices.h"

#include <mutex>

#include "base/log.h"
#include "hora_config.h"
#include "transport/rdma/device.h"
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

}  // namespace hora::transport::rdma
