#include "transport/rdma/verbs/qp_transitions.h"

#include <algorithm>
#include <cerrno>

#include "base/error.h"

namespace hora::transport::rdma::verbs {

Transition toInit(std::uint8_t port) {
  Transition step{"INIT", {}, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
  ibv_qp_attr& a = step.attributes;
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;  // the default partition
  a.port_num = port;
  // What the peer may do to memory registered here: the protocol only
  // writes (with and without immediate); no reads, no atomics.
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return step;
}

Transition toReadyToReceive(const LocalPath& local, const QpAddress& remote, const IbSettings& settings) {
  Transition step{"RTR", {},
                  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER};
  ibv_qp_attr& a = step.attributes;
  a.qp_state = IBV_QPS_RTR;
  // The largest packet both ports carry.
  a.path_mtu = static_cast<ibv_mtu>(std::min(local.activeMtu, remote.mtu));
  a.dest_qp_num = remote.qpNumber;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;  // RDMA reads the peer may have in flight here: none are sent, one is the minimum
  a.min_rnr_timer = kMinRnrTimer;

  ibv_ah_attr& path = a.ah_attr;
  path.port_num = local.port;
  path.sl = static_cast<std::uint8_t>(settings.serviceLevel);
  path.src_path_bits = 0;
  if (local.linkLayer == LinkLayer::Ethernet) {
    // RoCE has no LIDs: every packet carries a global route header, from
    // our chosen GID to the peer's, and that header is where the traffic
    // class (DSCP/ECN) lives.
    path.is_global = 1;
    std::copy(remote.gid.begin(), remote.gid.end(), path.grh.dgid.raw);
    path.grh.sgid_index = static_cast<std::uint8_t>(local.gidIndex);
    path.grh.hop_limit = 255;
    path.grh.traffic_class = static_cast<std::uint8_t>(settings.trafficClass);
    path.grh.flow_label = 0;
  } else {
    // InfiniBand within one subnet (fabric.h): the subnet manager's LID routes.
    path.is_global = 0;
    path.dlid = remote.lid;
  }
  return step;
}

Transition toReadyToSend(std::uint32_t localPsn, const IbSettings& settings) {
  Transition step{"RTS", {},
                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC};
  ibv_qp_attr& a = step.attributes;
  a.qp_state = IBV_QPS_RTS;
  a.timeout = static_cast<std::uint8_t>(settings.timeout);
  a.retry_cnt = static_cast<std::uint8_t>(settings.retryCount);
  a.rnr_retry = kRnrRetryForever;
  a.sq_psn = localPsn;
  a.max_rd_atomic = 1;
  return step;
}

void applyTransition(const VerbsApi& api, ibv_qp* qp, const Transition& transition, std::string_view what) {
  ibv_qp_attr attributes = transition.attributes;
  // ibv_modify_qp returns the errno value (and sets errno on most providers).
  const int result = api.modifyQp(qp, &attributes, transition.mask);
  if (result != 0)
    fail(ErrorKind::System, "verbs: ibv_modify_qp to ", transition.name, " failed for ", what, ": ",
         errnoText(result > 0 ? result : errno));
}

}  // namespace hora::transport::rdma::verbs
