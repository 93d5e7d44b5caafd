// The settings a reliable-connected queue pair is brought up with, read
// from NCCL's variables (each also as HORA_..., which wins) with NCCL's
// defaults, so a tuned NCCL job behaves the same under hora.
//
//   NCCL_IB_TIMEOUT             20   1-31   local ACK timeout: the sender waits
//                                            4.096 us * 2^timeout for an
//                                            acknowledgement before it retries
//                                            (20: about 4.3 s). 0, which verbs
//                                            reads as "wait forever", is refused.
//   NCCL_IB_RETRY_CNT            7   0-7    retries before the queue pair fails
//                                            with IBV_WC_RETRY_EXC_ERR (3 bits)
//   NCCL_IB_TC                   0   0-255  traffic class (RoCE: the DSCP and
//                                            ECN byte) of every packet
//   NCCL_IB_SL                   0   0-15   InfiniBand service level (4 bits)
//   NCCL_IB_QPS_PER_CONNECTION   1   1-128  queue pairs a connection spreads
//                                            its writes over
//   NCCL_IB_GID_INDEX        unset  -1-255  the GID a RoCE port sends from;
//                                            unset or -1: chosen per port
//                                            (gid_choice.h)
//
// NCCL documents -1 as "not set" for NCCL_IB_TC and NCCL_IB_SL; hora takes
// it the same way (the default, 0). Anything outside a range is an
// InvalidArgument error naming the variable, its value and the range:
// a hardware field would silently drop the high bits instead.
#pragma once

#include <optional>

namespace hora::transport::rdma::verbs {

struct IbSettings {
  int timeout = 20;
  int retryCount = 7;
  int trafficClass = 0;
  int serviceLevel = 0;
  int queuePairsPerConnection = 1;
  std::optional<int> gidIndex;  // unset: automatic
};

// Reads the variables above from the environment.
IbSettings readIbSettings();

}  // namespace hora::transport::rdma::verbs
