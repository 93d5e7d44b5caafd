// A QueuePair (rdma/queue_pair.h) on libfabric: one reliable datagram
// endpoint (FI_EP_RDM) with its completion queue and an address vector
// holding the one peer.
//
//   seam                      libfabric
//   registerMemory            fi_mr_reg (FI_WRITE for a write's source,
//                             FI_REMOTE_WRITE | FI_RECV for memory peers
//                             write into),
//                             shared with the domain's other
//                             endpoints (registration_cache.h), or kept to
//                             this one where the provider binds
//                             registrations to an endpoint (FI_MR_ENDPOINT)
//   postWrite                 fi_write into the peer's registered memory
//   postWriteWithImmediate    fi_senddata of no bytes, the immediate as
//                             remote CQ data; ordered after the writes by
//                             FI_ORDER_SAW
//   postReceive               fi_recv of no bytes
//   poll                      fi_cq_read (with manual progress, this is also
//                             what moves the provider's bytes), fi_cq_readerr
//   address / connect         fi_getname / fi_av_insert
//   eventFd / arm             the completion queue's wait fd (FI_WAIT_FD,
//                             FI_GETWAIT) / fi_trywait
//
// Every operation is given a context of its own (FI_CONTEXT2) that says
// what it was; writes posted unsignaled complete too, and are dropped here
// once they have released the signaled completions posted after them
// (ordered_send_completions.h).
//
// Posting never waits. A provider may answer "try again" (FI_EAGAIN) for a
// while, e.g. until its connection to the peer is made, and that needs the
// peer to make progress on this very endpoint, which it cannot while it
// waits in a post of its own: so an operation refused for now joins a
// backlog, posted in order by later posts and polls.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>
#include <memory>
#include <vector>

#include "transport/rdma/ofi/ordered_send_completions.h"
#include "transport/rdma/queue_pair.h"
#include "transport/rdma/registration_cache.h"

namespace hora::transport::rdma::ofi {

class OfiDevice;

class OfiQueuePair final : public QueuePair {
 public:
  explicit OfiQueuePair(std::shared_ptr<OfiDevice> device);
  ~OfiQueuePair() override;
  OfiQueuePair(const OfiQueuePair&) = delete;
  OfiQueuePair& operator=(const OfiQueuePair&) = delete;

  std::size_t sendQueueDepth() const override { return sendDepth_; }
  std::size_t receiveQueueDepth() const override { return receiveDepth_; }
  Region registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) override;
  void deregisterMemory(const Region& region) override;
  void postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to, std::uint64_t id,
                 bool signaled) override;
  void postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) override;
  void postReceive(std::uint64_t id) override;
  std::size_t poll(Completion* out, std::size_t max) override;
  int eventFd() const override { return waitFd_; }
  bool arm() override;
  std::vector<char> address() const override;
  void connect(const std::vector<char>& peerAddress) override;

  // From the device's progress thread (ofi_device.h), once a period: a
  // progress call when the rank has not polled since the thread's last
  // visit. Safe beside the rank's own calls: the domain is thread-safe, and
  // a read of no entries takes none of the rank's completions.
  void progressIfUnattended();
  // How many progress calls the progress thread made for this queue pair.
  std::uint64_t unattendedProgressCalls() const { return unattendedCalls_.load(); }

 private:
  // One operation in flight; libfabric hands `context` back on completion.
  struct Request {
    fi_context2 context;  // first: the pointer libfabric returns is this
    std::uint64_t id = 0;
    Operation operation = Operation::Write;
    bool signaled = true;
    std::uint64_t sendSequence = 0;  // writes and writes with immediate: their order of posting
  };
  // An operation as it will be posted.
  struct Posting {
    Request* request = nullptr;
    const char* source = nullptr;  // writes
    std::size_t bytes = 0;
    void* descriptor = nullptr;
    RemoteMemory to;
    std::uint32_t immediate = 0;   // writes with immediate
  };
  Request* take(Operation operation, std::uint64_t id, bool signaled);
  void post(const Posting& posting);
  // Posts what the backlog holds, oldest first, until the provider says
  // "try again"; an error for anything else.
  void flush();
  ssize_t tryPost(const Posting& posting);
  // Reads the completion queue into pending_.
  void drain();

  // Throws the failure of `call`: a Remote error where `posting` was
  // refused because the peer is gone, else System.
  [[noreturn]] void raise(const char* call, long result, bool posting = false) const;

  std::shared_ptr<OfiDevice> device_;
  fid_ep* endpoint_ = nullptr;
  fid_cq* completions_ = nullptr;
  fid_av* addresses_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  int waitFd_ = -1;  // the completion queue's, where the provider offers one
  std::size_t sendDepth_ = 0;
  std::size_t receiveDepth_ = 0;
  // Where this endpoint's registrations are kept: the domain's, or its own
  // where the provider binds registrations to an endpoint.
  RegistrationCache& registrations();
  void releaseRegion(const HeldRegion& held);
  void releaseAllRegions();
  RegistrationCache ownRegistrations_;
  std::vector<HeldRegion> regions_;  // held; Region::localKey is the fid_mr*
  std::vector<std::unique_ptr<Request>> requests_;  // the rank's thread only
  std::vector<Request*> free_;                       // the rank's thread only
  OrderedSendCompletions sendOrder_;                 // the rank's thread only
  // The rank's thread and the device's progress thread (which may post
  // what the rank left in the backlog) share these, under mutex_.
  std::mutex mutex_;
  std::deque<Completion> pending_;
  std::deque<Posting> backlog_;
  std::exception_ptr deferred_;  // an error the progress thread met, for the rank
  std::chrono::steady_clock::time_point refusedSince_;  // when the backlog's front was first refused
  // The rank's polls, counted (no clock read on its hot path); the progress
  // thread remembers the count it saw last.
  std::atomic<std::uint64_t> polls_{0};
  std::uint64_t pollsSeen_ = 0;  // the progress thread's
  std::atomic<std::uint64_t> unattendedCalls_{0};  // progress calls the progress thread made for an absent rank
};

}  // namespace hora::transport::rdma::ofi
