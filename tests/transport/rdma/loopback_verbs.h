// A loopback libibverbs for tests: a VerbsApi table (verbs_api.h) whose
// queue pairs, made in one process, connect to each other by queue pair
// number and move bytes, so that hora's own verbs backend (VerbsQueuePair,
// VerbsDevice) carries the credit protocol end to end without a NIC. What
// the backend relies on behaves as verbs says:
//   - an RDMA write lands in the registered memory the remote key names,
//     in ascending address order (the last eight bytes last, as a release),
//     or fails with IBV_WC_REM_ACCESS_ERR (bad key, out of bounds, memory
//     registered without IBV_ACCESS_REMOTE_WRITE) and
//     IBV_WC_LOC_PROT_ERR (a local key that does not cover the source);
//   - a write with immediate consumes the peer's oldest posted receive,
//     which completes there as IBV_WC_RECV_RDMA_WITH_IMM with the immediate
//     as sent (network byte order), or fails with IBV_WC_RNR_RETRY_EXC_ERR
//     when none is posted, and IBV_WC_RETRY_EXC_ERR when the peer's queue
//     pair is gone;
//   - only signaled requests and failures complete on the sender's CQ;
//   - a completion channel's fd becomes readable at the first completion
//     after ibv_req_notify_cq, and only then;
//   - posting before the queue pair is ready to send is refused (EINVAL).
// Requests run at post time, in the poster's thread, under one lock.
// Not modelled: queue depths, the error state after a failure.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "transport/rdma/verbs/verbs_api.h"
#include "transport/rdma/verbs/verbs_port.h"

namespace hora::transport::rdma::testing {

class LoopbackVerbs {
 public:
  // Becomes the table's state; one at a time in a process.
  LoopbackVerbs();
  ~LoopbackVerbs();
  LoopbackVerbs(const LoopbackVerbs&) = delete;
  LoopbackVerbs& operator=(const LoopbackVerbs&) = delete;

  const verbs::VerbsApi& api() const { return api_; }
  // An InfiniBand port on this library, as openVerbsPort leaves one.
  std::shared_ptr<verbs::VerbsPort> port(const verbs::IbSettings& settings = {});

  // Bytes RDMA writes have landed, writes with immediate delivered, and
  // completion channel wake-ups raised.
  std::uint64_t bytesWritten() const { return bytesWritten_.load(); }
  std::uint64_t immediatesDelivered() const { return immediates_.load(); }
  std::uint64_t wakeUps() const { return wakeUps_.load(); }
  int queuePairsMade() const { return queuePairsMade_.load(); }
  // Memory registrations and queue pairs in force now.
  std::size_t registrationsInForce() const;
  std::size_t queuePairsInForce() const;

  struct State;  // the table's functions reach it through a static pointer

 private:
  verbs::VerbsApi api_;
  std::unique_ptr<State> state_;
  std::atomic<std::uint64_t> bytesWritten_{0}, immediates_{0}, wakeUps_{0};
  std::atomic<int> queuePairsMade_{0};
};

}  // namespace hora::transport::rdma::testing
