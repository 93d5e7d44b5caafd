// The transport registry: what this build can carry, and which registered
// transport carries a pair topology chose a kind for that is not built.
#include <gtest/gtest.h>

#include "transport/registry.h"

namespace hora::transport {
namespace {

TEST(TransportRegistry, TcpAndShmAreRegisteredAndOnlyShmSharesHostMemory) {
  const TransportEntry* tcp = findTransport(TransportKind::Tcp);
  const TransportEntry* shm = findTransport(TransportKind::Shm);
  ASSERT_NE(tcp, nullptr);
  ASSERT_NE(shm, nullptr);
  EXPECT_FALSE(tcp->sharesHostMemory);
  EXPECT_TRUE(shm->sharesHostMemory);
  EXPECT_EQ(findTransport(TransportKind::P2p), nullptr);
  EXPECT_EQ(findTransport(TransportKind::Ib), nullptr);
}

TEST(TransportRegistry, KindsNotBuiltAreCarriedByTheNearestThatConnectsTheSamePairs) {
  EXPECT_EQ(carrierOf(TransportKind::Tcp), TransportKind::Tcp);
  EXPECT_EQ(carrierOf(TransportKind::Shm), TransportKind::Shm);
  EXPECT_EQ(carrierOf(TransportKind::P2p), TransportKind::Shm);
  EXPECT_EQ(carrierOf(TransportKind::Ib), TransportKind::Tcp);
}

}  // namespace
}  // namespace hora::transport
