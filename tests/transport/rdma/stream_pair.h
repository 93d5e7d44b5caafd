// A sending and a receiving credit stream (rdma/credit_stream.h)
// connected over a fresh fake device (fake_queue_pair.h), for protocol
// tests in one process.
#pragma once

#include <memory>

#include "fake_queue_pair.h"
#include "transport/rdma/credit_stream.h"

namespace hora::transport::rdma::testing {

struct StreamPair {
  std::shared_ptr<FakeFabric> fabric;
  std::unique_ptr<CreditSendStream> sender;
  std::unique_ptr<CreditRecvStream> receiver;
  FakeQueuePair* sendQp = nullptr;
  FakeQueuePair* recvQp = nullptr;
  int senderLifeline = -1;    // the fds inside the streams' Sockets, to close one end
  int receiverLifeline = -1;
};

// The lifeline is a socket pair. `extraQueuePairs` more on each side, each
// slower than the one before (so that their completions come out of
// order). `registrations`: the sender's registered program buffers.
StreamPair connectPair(const CreditGeometry& geometry, const FakeOptions& options = {}, int extraQueuePairs = 0,
                       std::shared_ptr<const UserRegistrations> registrations = nullptr);

}  // namespace hora::transport::rdma::testing
