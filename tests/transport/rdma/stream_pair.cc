#include "stream_pair.h"

#include <sys/socket.h>

#include <gtest/gtest.h>

#include <future>

namespace hora::transport::rdma::testing {

StreamPair connectPair(const CreditGeometry& geometry, const FakeOptions& options, int extraQueuePairs,
                       std::shared_ptr<const UserRegistrations> registrations) {
  auto fabric = std::make_shared<FakeFabric>();
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  auto sendQp = fabric->createQueuePair(options);
  auto recvQp = fabric->createQueuePair(options);
  std::vector<std::unique_ptr<QueuePair>> sendQps;
  int made = 0;
  QueuePairFactory more = [&, fabric]() -> std::unique_ptr<QueuePair> {
    FakeOptions slower = options;
    slower.delaySteps += 3 * (++made);
    return fabric->createQueuePair(slower);
  };
  StreamPair pair;
  pair.fabric = fabric;
  pair.sendQp = sendQp.get();
  pair.recvQp = recvQp.get();
  pair.senderLifeline = fds[0];
  pair.receiverLifeline = fds[1];
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  auto receiving = std::async(std::launch::async, [&] {
    return std::make_unique<CreditRecvStream>(std::move(recvQp), extraQueuePairs > 0 ? more : QueuePairFactory{},
                                              Socket(fds[1]), "rank 1", geometry, deadline);
  });
  sendQps.push_back(std::move(sendQp));
  for (int q = 0; q < extraQueuePairs; ++q) {
    FakeOptions slower = options;
    slower.delaySteps += 2 * (q + 1);
    sendQps.push_back(fabric->createQueuePair(slower));
  }
  pair.sender = std::make_unique<CreditSendStream>(std::move(sendQps), Socket(fds[0]), "rank 1", geometry, deadline,
                                                   std::move(registrations));
  pair.receiver = receiving.get();
  return pair;
}

}  // namespace hora::transport::rdma::testing
