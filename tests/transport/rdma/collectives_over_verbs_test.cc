// hora's verbs backend end to end, without a NIC: every collective through
// the ib transport (HORA_TRANSPORT=ib, ranks as threads), the credit
// protocol running over hora's own VerbsQueuePair and VerbsDevice, whose
// ibv_* calls go to a loopback libibverbs that moves the bytes
// (loopback_verbs.h). This covers the backend's work requests, completions,
// immediates, registrations and completion-channel sleeps as the protocol
// uses them; it is not hardware coverage: nothing here has run on an
// InfiniBand or RoCE NIC.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

#include "every_collective.h"
#include "loopback_verbs.h"
#include "nccl.h"
#include "transport/rdma/device.h"
#include "transport/rdma/verbs/verbs_device.h"

namespace hora::transport::rdma {
namespace {

using testing::checkEveryCollective;

class OverLoopbackVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("HORA_TRANSPORT", "ib", 1);
    ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    useDevice(TransportKind::Ib, nullptr);
    ::unsetenv("HORA_TRANSPORT");
  }
  // Runs body(rank, comm) on one thread per rank over communicators whose
  // ib connections use a verbs device on the loopback library.
  template <typename Body>
  void onRanks(int nranks, const verbs::IbSettings& settings, Body body) {
    useDevice(TransportKind::Ib, std::make_shared<verbs::VerbsDevice>(verbs_.port(settings)));
    testing::onEachRank(nranks, body);
    useDevice(TransportKind::Ib, nullptr);
    EXPECT_GT(verbs_.bytesWritten(), 0u) << "no byte went through the verbs backend";
    EXPECT_GT(verbs_.immediatesDelivered(), 0u);
    // Every queue pair and registration ends with its communicator.
    EXPECT_EQ(verbs_.queuePairsInForce(), 0u);
    EXPECT_EQ(verbs_.registrationsInForce(), 0u);
  }
  testing::LoopbackVerbs verbs_;
};

TEST_F(OverLoopbackVerbs, EveryCollectiveOnTwoAndFourRanks) {
  for (const int n : {2, 4})
    onRanks(n, {}, [&](int rank, ncclComm_t comm) { checkEveryCollective(rank, n, comm, {0, 1, 7, 1031, 65537}); });
  // Each rank: a sending and a receiving end towards each ring neighbour.
  EXPECT_GE(verbs_.queuePairsMade(), 2 * 2 + 2 * 4);
}

// 64 MiB (and an odd element more) per rank block: every collective, each
// slot of every connection reused hundreds of times.
TEST_F(OverLoopbackVerbs, EveryCollectiveAt64MiBOnTwoRanks) {
  constexpr std::size_t kCount = (std::size_t{64} << 20) / sizeof(std::int32_t) + 1;
  onRanks(2, {}, [&](int rank, ncclComm_t comm) { checkEveryCollective(rank, 2, comm, {kCount}); });
  EXPECT_GT(verbs_.bytesWritten(), std::uint64_t{64} << 20);
}

// NCCL_IB_QPS_PER_CONNECTION = 3: each connection's slots take turns over
// three verbs queue pairs, whose completions the receiver puts back in
// grant order.
TEST_F(OverLoopbackVerbs, EveryCollectiveOverThreeQueuePairsPerConnection) {
  verbs::IbSettings settings;
  settings.queuePairsPerConnection = 3;
  onRanks(3, settings, [&](int rank, ncclComm_t comm) { checkEveryCollective(rank, 3, comm, {0, 1, 1031, 65537}); });
  EXPECT_GE(verbs_.queuePairsMade(), 3 * 2 * 3) << "three queue pairs per connection, both ends";
}

// A rank that waits long for its peer sleeps on its queue pairs'
// completion channel (one, or an epoll set of several) and is woken by the
// completion: it uses a small part of the time it waits, and the channel
// raised wake-ups.
TEST_F(OverLoopbackVerbs, AWaitingRankSleepsOnTheCompletionChannel) {
  for (const int queuePairs : {1, 2}) {
    SCOPED_TRACE(std::to_string(queuePairs) + " queue pair(s) per connection");
    verbs::IbSettings settings;
    settings.queuePairsPerConnection = queuePairs;
    constexpr auto kLate = std::chrono::milliseconds(1500);
    std::clock_t cpuBefore = 0, cpuAfter = 0;
    const std::uint64_t wakeUpsBefore = verbs_.wakeUps();
    onRanks(2, settings, [&](int rank, ncclComm_t comm) {
      std::vector<float> data(1024, 1.0f);
      ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr),
                ncclSuccess);
      if (rank == 1) {
        cpuBefore = std::clock();
        std::this_thread::sleep_for(kLate);
        cpuAfter = std::clock();
      }
      ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr),
                ncclSuccess);
      EXPECT_EQ(data[0], 4.0f);
    });
    const double cpuSeconds = static_cast<double>(cpuAfter - cpuBefore) / CLOCKS_PER_SEC;
    EXPECT_LT(cpuSeconds, 0.25) << "the waiting rank polled instead of sleeping on the completion channel";
    EXPECT_GT(verbs_.wakeUps(), wakeUpsBefore) << "no completion channel woke a sleeping rank";
  }
}

}  // namespace
}  // namespace hora::transport::rdma
