// A QueuePair (rdma/queue_pair.h) on libibverbs: one reliable-connected
// queue pair with one completion queue for both its queues, and a
// completion channel to sleep on.
//
//   seam                      verbs
//   registerMemory            ibv_reg_mr: no access flag for a write's
//                             source (local reads need none), local and
//                             remote write for memory peers write into;
//                             shared with the port's other queue pairs
//                             (registration_cache.h)
//   postWrite                 IBV_WR_RDMA_WRITE, signaled or not
//   postWriteWithImmediate    IBV_WR_RDMA_WRITE_WITH_IMM of no bytes; the
//                             immediate travels in network byte order
//   postReceive               a receive of no bytes (the immediate is all
//                             that arrives)
//   poll                      ibv_poll_cq; ibv_wc_status -> Status
//   eventFd / arm             the completion channel's fd (non-blocking) /
//                             ibv_req_notify_cq after draining its events
//   address / connect         qp_address.h / INIT -> RTR -> RTS (qp_transitions.h)
//
// A failed completion's opcode is undefined in verbs, so what a completion
// was is not read from it: each posted request gets a sequence number as
// its verbs work request id, and the queue pair remembers, per queue and in
// posting order, the protocol's id and operation for it. A reliable
// connection completes each queue in order, so a completion also retires
// the unsignaled writes posted before it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "transport/rdma/queue_pair.h"
#include "transport/rdma/verbs/qp_address.h"
#include "transport/rdma/verbs/verbs_port.h"

namespace hora::transport::rdma::verbs {

// How an ibv_wc_status reads to the protocol.
Status statusOf(ibv_wc_status status);

class VerbsQueuePair final : public QueuePair {
 public:
  // Creates the queue pair on `port` and moves it to INIT.
  VerbsQueuePair(std::shared_ptr<VerbsPort> port, std::size_t sendDepth, std::size_t receiveDepth);
  ~VerbsQueuePair() override;
  VerbsQueuePair(const VerbsQueuePair&) = delete;
  VerbsQueuePair& operator=(const VerbsQueuePair&) = delete;

  std::size_t sendQueueDepth() const override { return sendDepth_; }
  std::size_t receiveQueueDepth() const override { return receiveDepth_; }
  Region registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) override;
  void deregisterMemory(const Region& region) override;
  void postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to, std::uint64_t id,
                 bool signaled) override;
  void postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) override;
  void postReceive(std::uint64_t id) override;
  std::size_t poll(Completion* out, std::size_t max) override;
  int eventFd() const override;
  bool arm() override;
  std::vector<char> address() const override;
  void connect(const std::vector<char>& peerAddress) override;

 private:
  struct Posted {
    std::uint64_t sequence;
    std::uint64_t id;
    Operation operation;
    bool signaled;
  };
  void postSend(ibv_send_wr& request, std::uint64_t id, Operation operation, bool signaled);
  Completion retire(const ibv_wc& completion);
  void release();
  // Gives a region back to the port's registrations.
  void releaseRegion(const HeldRegion& held);
  // How the port's registrations end one of theirs.
  auto endRegistration() const {
    return [api = &api_](void* mr) { api->deregMr(static_cast<ibv_mr*>(mr)); };
  }
  std::string what() const;

  std::shared_ptr<VerbsPort> port_;
  const VerbsApi& api_;
  std::size_t sendDepth_;
  std::size_t receiveDepth_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  std::vector<HeldRegion> regions_;  // held in the port's registrations
  std::uint32_t psn_ = 0;
  std::uint64_t nextSequence_ = 1;
  std::deque<Posted> sends_;
  std::deque<Posted> receives_;
  std::deque<Completion> early_;  // found by arm(), handed out by the next poll()
};

}  // namespace hora::transport::rdma::verbs
