// How a reliable-connected queue pair is brought up: three ibv_modify_qp
// calls, each naming in its mask exactly the attributes that state
// requires (verbs refuses a transition with one missing or one extra,
// EINVAL, and says nothing about which):
//
//   RESET -> INIT  state, pkey index, port, remote access
//                  at creation: receives may be posted from INIT on.
//   INIT  -> RTR   state, address vector (whom to send to: the peer's LID,
//   (ready to       or on RoCE its GID with our GID index, traffic class and
//   receive)        hop limit), path MTU, peer's queue pair number, the
//                  peer's first PSN, responder resources, RNR timer
//   RTR   -> RTS   state, ACK timeout, retry count, RNR retry, our first
//   (ready to       PSN, initiator depth
//   send)
//
// The attributes are built by plain functions, so a test reads them
// without a NIC; applyTransition makes the call through the VerbsApi table.
#pragma once

#include <cstdint>
#include <string_view>

#include "transport/rdma/verbs/gid.h"
#include "transport/rdma/verbs/ib_settings.h"
#include "transport/rdma/verbs/qp_address.h"
#include "transport/rdma/verbs/verbs_api.h"

namespace hora::transport::rdma::verbs {

struct Transition {
  const char* name;  // "INIT", "RTR", "RTS": for error messages
  ibv_qp_attr attributes;
  int mask;
};

// This end's side of the path: its port and the GID it sends from.
struct LocalPath {
  std::uint8_t port = 1;
  LinkLayer linkLayer = LinkLayer::InfiniBand;
  std::uint8_t activeMtu = IBV_MTU_4096;
  int gidIndex = 0;
  Gid gid{};
};

// How long a receiver that has no receive posted makes the sender wait
// before its retry (ibv_qp_attr::min_rnr_timer code 12: 0.64 ms), and how
// often the sender retries (7: without limit, as NCCL does). The credit
// protocol posts a receive before it grants the slot, so a retry is only a
// delay; a protocol bug shows as a stalled stream, which the caller's
// timeout reports.
inline constexpr std::uint8_t kMinRnrTimer = 12;
inline constexpr std::uint8_t kRnrRetryForever = 7;

Transition toInit(std::uint8_t port);
Transition toReadyToReceive(const LocalPath& local, const QpAddress& remote, const IbSettings& settings);
Transition toReadyToSend(std::uint32_t localPsn, const IbSettings& settings);

// ibv_modify_qp with the transition; a failure is a System error naming the
// call, the target state, `what` (the queue pair, e.g. "mlx5_0:1 qp 0x1a2")
// and the errno.
void applyTransition(const VerbsApi& api, ibv_qp* qp, const Transition& transition, std::string_view what);

}  // namespace hora::transport::rdma::verbs
