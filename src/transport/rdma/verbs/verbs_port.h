// One opened port of an RDMA device: the device context, a protection
// domain for the memory its queue pairs register (one registration per
// memory owner and range, shared by them all: registration_cache.h), and
// what a queue pair needs to know about the port (its LID, MTU, link layer
// and the GID it sends from). Shared by the queue pairs made on it; the last one out
// closes the device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/rdma/registration_cache.h"
#include "transport/rdma/verbs/ib_settings.h"
#include "transport/rdma/verbs/qp_transitions.h"
#include "transport/rdma/verbs/verbs_api.h"

namespace hora::transport::rdma::verbs {

struct VerbsPort {
  VerbsPort() = default;
  ~VerbsPort();
  VerbsPort(const VerbsPort&) = delete;
  VerbsPort& operator=(const VerbsPort&) = delete;

  const VerbsApi* api = nullptr;
  ibv_context* context = nullptr;  // owned
  ibv_pd* pd = nullptr;            // owned
  RegistrationCache registrations;  // in pd; empty once the last queue pair is gone
  std::string name;                // "mlx5_0:1", for messages
  std::uint16_t lid = 0;
  LocalPath path;
  IbSettings settings;
};

// Opens port `port` of `device`: the port must be active; on RoCE its GID
// is chosen by gid_choice.h (logged at INFO with the reason). Errors name
// the call that failed and the port.
std::shared_ptr<VerbsPort> openVerbsPort(const VerbsApi& api, ibv_device* device, std::uint8_t port,
                                         const IbSettings& settings);

}  // namespace hora::transport::rdma::verbs
