// What a rank waiting on an RDMA connection sleeps on: the completion fds
// of the connection's queue pairs.
//
// A connection with one queue pair offers that queue pair's fd. One with
// several (NCCL_IB_QPS_PER_CONNECTION, or rails: queue pair q on rail
// q % rails) has several fds, while a connection gives the progress loop
// one pollfd entry. They are gathered in an epoll set: poll() reports an
// epoll fd readable while any fd in it is, so the one entry wakes the rank
// at the first completion of any queue pair. Without it such a connection
// offered nothing to sleep on, and a waiting rank looked again every
// 50 microseconds for as long as it waited.
//
// Sleeping is safe only once every queue pair is armed (QueuePair::arm):
// a completion that came before that raises no event. A queue pair that
// will not arm (one may be waiting already) or has no fd means no sleep:
// the entry's fd is -1 and the rank looks again soon.
#pragma once

#include <poll.h>

#include <memory>
#include <vector>

#include "transport/rdma/queue_pair.h"

namespace hora::transport::rdma {

class CompletionWait {
 public:
  CompletionWait() = default;
  // Watches the fds of `queuePairs`; with one queue pair no set is needed.
  // A queue pair without an fd leaves the set unmade (entry() is then
  // always -1 for this connection).
  explicit CompletionWait(const std::vector<std::unique_ptr<QueuePair>>& queuePairs);
  ~CompletionWait();
  CompletionWait(CompletionWait&& other) noexcept;
  CompletionWait& operator=(CompletionWait&& other) noexcept;
  CompletionWait(const CompletionWait&) = delete;
  CompletionWait& operator=(const CompletionWait&) = delete;

  // Arms every queue pair and gives what to sleep on until one of them
  // completes something; fd -1 when the rank must look again instead.
  pollfd entry(const std::vector<std::unique_ptr<QueuePair>>& queuePairs) const;

  // The epoll set's fd (-1 for one queue pair, or when it was not made).
  int setFd() const { return epoll_; }

 private:
  int epoll_ = -1;
};

}  // namespace hora::transport::rdma
