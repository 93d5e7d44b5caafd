// hora's ofi transport end to end in one process: ranks as threads, the
// RDMA credit protocol on libfabric's tcp provider (HORA_TRANSPORT=ofi,
// HORA_OFI_PROVIDER=tcp), every collective checked against a reference.
// This is protocol and libfabric coverage; no RDMA hardware is involved
// (docs/transports.md says what has run where).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

#include "base/socket.h"
#include "every_collective.h"
#include "nccl.h"
#include "transport/memory_owner.h"
#include "transport/rdma/credit_stream.h"
#include "transport/rdma/multi_rail.h"
#include "transport/rdma/ofi/ofi_device.h"
#include "transport/rdma/ofi/ofi_queue_pair.h"

namespace hora::transport::rdma::ofi {
namespace {

using ::testing::HasSubstr;
using testing::checkEveryCollective;
using testing::input;

// The libfabric device, counting the queue pairs connections ask of it:
// proof that the bytes went this way and not over hora's own tcp.
class CountingDevice final : public Device {
 public:
  explicit CountingDevice(std::shared_ptr<Device> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::unique_ptr<QueuePair> createQueuePair() override {
    ++created_;
    return inner_->createQueuePair();
  }
  CreditGeometry geometry() const override { return inner_->geometry(); }
  int queuePairsCreated() const { return created_.load(); }

 private:
  std::shared_ptr<Device> inner_;
  std::atomic<int> created_{0};
};

class OverOfi : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
    ::setenv("HORA_TRANSPORT", "ofi", 1);
    ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
    OfiOpening opening = openOfiDevice(/*allowSoftware=*/true);
    ASSERT_TRUE(opening.device) << "libfabric's tcp provider: " << opening.why;
    device_ = std::make_shared<CountingDevice>(opening.device);
    useDevice(TransportKind::Ofi, device_);
  }
  void TearDown() override {
    useDevice(TransportKind::Ofi, nullptr);
    ::unsetenv("HORA_TRANSPORT");
  }
  // Runs body(rank, comm) on one thread per rank over fresh communicators.
  template <typename Body>
  void onRanks(int nranks, Body body) {
    testing::onEachRank(nranks, body);
    // Each rank: a sending and a receiving end per ring neighbour, at least.
    EXPECT_GE(device_->queuePairsCreated(), 2 * nranks) << "connections did not go through ofi";
  }
  std::shared_ptr<CountingDevice> device_;
};

TEST_F(OverOfi, EveryCollectiveOnTwoThreeAndFourRanks) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    onRanks(n, [&](int rank, ncclComm_t comm) { checkEveryCollective(rank, n, comm, {0, 1, 7, 1031, 65537}); });
  }
}

TEST_F(OverOfi, A64MiBAllReduceInPlace) {
  constexpr std::size_t kCount = 64u << 20 >> 2;  // 64 MiB of int32
  std::vector<std::int32_t> data[2] = {std::vector<std::int32_t>(kCount), std::vector<std::int32_t>(kCount)};
  onRanks(2, [&](int rank, ncclComm_t comm) {
    for (std::size_t i = 0; i < kCount; ++i) data[rank][i] = input(rank, i);
    EXPECT_EQ(ncclAllReduce(data[rank].data(), data[rank].data(), kCount, ncclInt32, ncclSum, comm, nullptr),
              ncclSuccess)
        << ncclGetLastError(comm);
  });
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(data[r][i], input(0, i) + input(1, i)) << "rank " << r << " element " << i;
}

// Small slices (HORA_SLICE_SIZE=4K; 1K in the api suite showed it): each
// post fills a granted slot of its own, so the connection's 8 slots and the
// staging slots behind them held less than two ring steps, and 3 ranks
// waited until the deadline. The slice towards an RDMA peer is raised to
// what makes the slots carry two steps.
TEST_F(OverOfi, SmallSlicesStillCarryRingSteps) {
  ::setenv("HORA_SLICE_SIZE", "4K", 1);
  ::setenv("HORA_TIMEOUT", "20", 1);
  constexpr std::size_t kCount = 1 << 20;  // 4 MiB of int32: many steps of 512 KiB
  onRanks(3, [&](int rank, ncclComm_t comm) {
    std::vector<std::int32_t> data(kCount);
    for (std::size_t i = 0; i < kCount; ++i) data[i] = input(rank, i);
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess)
        << ncclGetLastError(comm);
    for (std::size_t i = 0; i < kCount; i += 4099)
      ASSERT_EQ(data[i], input(0, i) + input(1, i) + input(2, i)) << "rank " << rank << " element " << i;
  });
  ::unsetenv("HORA_SLICE_SIZE");
  ::unsetenv("HORA_TIMEOUT");
}

// Buffers registered with ncclCommRegister are sent without a copy
// (fi_mr_reg of the program's memory, once per queue pair), then
// deregistered: results stay exact, before and after.
TEST_F(OverOfi, RegisteredBuffersAllReduceExactly) {
  constexpr std::size_t kCount = 1u << 20;  // 4 MiB of int32: many slots
  std::vector<std::int32_t> data[3];
  onRanks(3, [&](int rank, ncclComm_t comm) {
    data[rank].resize(kCount);
    void* handle = nullptr;
    ASSERT_EQ(ncclCommRegister(comm, data[rank].data(), kCount * sizeof(std::int32_t), &handle), ncclSuccess);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < kCount; ++i) data[rank][i] = input(rank, i + round);
      ASSERT_EQ(ncclAllReduce(data[rank].data(), data[rank].data(), kCount, ncclInt32, ncclSum, comm, nullptr),
                ncclSuccess)
          << ncclGetLastError(comm);
      for (std::size_t i = 0; i < kCount; ++i)
        ASSERT_EQ(data[rank][i], input(0, i + round) + input(1, i + round) + input(2, i + round))
            << "rank " << rank << ", round " << round << ", element " << i;
    }
    ASSERT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
    for (std::size_t i = 0; i < kCount; ++i) data[rank][i] = input(rank, i);
    ASSERT_EQ(ncclAllReduce(data[rank].data(), data[rank].data(), kCount, ncclInt32, ncclSum, comm, nullptr),
              ncclSuccess);
    for (std::size_t i = 0; i < kCount; i += 101)
      ASSERT_EQ(data[rank][i], input(0, i) + input(1, i) + input(2, i)) << "after deregistering";
  });
}

// A rank that waits long for its peer sleeps on the completion queue's fd
// (after the spin budget) instead of polling: the process uses a small
// fraction of the time it waits. The waiting rank's CPU time while its
// peer is late, in seconds.
double cpuWhileWaitingForALatePeer() {
  constexpr auto kLate = std::chrono::milliseconds(1500);
  std::clock_t cpuBefore = 0, cpuAfter = 0;
  testing::onEachRank(2, [&](int rank, ncclComm_t comm) {
    std::vector<float> data(1024, 1.0f);
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    if (rank == 1) {
      cpuBefore = std::clock();
      std::this_thread::sleep_for(kLate);
      cpuAfter = std::clock();
    }
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(data[0], 4.0f);
  });
  return static_cast<double>(cpuAfter - cpuBefore) / CLOCKS_PER_SEC;
}

TEST_F(OverOfi, AWaitingRankSleepsOnTheCompletionQueue) {
  // Sleeping on the fd costs 0.06-0.1 s here (the process's CPU: the
  // device's progress thread included); looking every 50 us without one
  // costs a third of the wait or more (0.51 s measured).
  EXPECT_LT(cpuWhileWaitingForALatePeer(), 0.25)
      << "the waiting rank polled instead of sleeping on the completion queue";
  EXPECT_GE(device_->queuePairsCreated(), 4) << "connections did not go through ofi";
}

// The same with two queue pairs per connection (two rails over the one
// provider domain, as NCCL_IB_QPS_PER_CONNECTION=2 gives on verbs): the
// rank sleeps on one fd that any of the queue pairs' completions wakes
// (rdma/completion_wait.h), where before it looked again every 50 us.
TEST_F(OverOfi, AWaitingRankWithTwoQueuePairsPerConnectionSleepsToo) {
  auto twoQueuePairs = combineRails({device_, device_});
  ASSERT_EQ(twoQueuePairs->rails(), 2u);
  useDevice(TransportKind::Ofi, twoQueuePairs);
  const int before = device_->queuePairsCreated();
  EXPECT_LT(cpuWhileWaitingForALatePeer(), 0.25)
      << "the waiting rank polled instead of sleeping on its queue pairs' fds";
  // Two ranks, a connection each way, two queue pairs per connection.
  EXPECT_GE(device_->queuePairsCreated() - before, 4 * 2) << "connections did not use two queue pairs";
}

// A sender that posts its last bytes and then makes no call into the
// provider for a while (a rank that returned from its collective and waits
// on something else) must not hold up its receiver: with a manual-progress
// provider (tcp) posted bytes move only through calls into it, which the
// device's progress thread makes while the rank is away. 16 slots of 1 MiB
// in flight: more than the sockets under the provider hold at once.
TEST(OfiProgress, PostedBytesArriveWhileTheSenderIsAway) {
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true, "lo");
  ASSERT_TRUE(opening.device) << opening.why;
  const CreditGeometry geometry{16, 1u << 20};
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  auto receiving = std::async(std::launch::async, [&] {
    return std::make_unique<CreditRecvStream>(opening.device->createQueuePair(), QueuePairFactory{}, Socket(fds[1]),
                                              "rank 1", geometry, deadline);
  });
  auto senderQp = opening.device->createQueuePair();
  auto* senderOfi = dynamic_cast<OfiQueuePair*>(senderQp.get());
  ASSERT_NE(senderOfi, nullptr);
  std::vector<std::unique_ptr<QueuePair>> senderQps;
  senderQps.push_back(std::move(senderQp));
  auto sender = std::make_unique<CreditSendStream>(std::move(senderQps), Socket(fds[0]), "rank 0", geometry, deadline);
  auto receiver = receiving.get();

  const std::size_t total = geometry.slots * geometry.slotBytes;
  std::vector<char> data(total), got(total);
  for (std::size_t i = 0; i < total; ++i) data[i] = static_cast<char>(i * 7 + 3);
  std::atomic<bool> allPosted{false};
  std::uint64_t callsWhileAway = 0;
  std::thread sending([&] {
    std::size_t sent = 0;
    const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sent < total && std::chrono::steady_clock::now() < giveUp) sent += sender->trySend(data.data() + sent, total - sent);
    allPosted = true;
    const std::uint64_t before = senderOfi->unattendedProgressCalls();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // away: no call into the provider
    callsWhileAway = senderOfi->unattendedProgressCalls() - before;
  });
  std::size_t received = 0;
  auto start = std::chrono::steady_clock::now();
  const auto giveUp = start + std::chrono::seconds(10);
  while (received < total && std::chrono::steady_clock::now() < giveUp) {
    if (!allPosted) start = std::chrono::steady_clock::now();  // time only the part the sender is away
    received += receiver->tryRecv(got.data() + received, total - received);
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sending.join();
  ASSERT_EQ(received, total);
  EXPECT_EQ(got, data);
  EXPECT_LT(waited, 1.5) << "the receiver waited for the sender to come back to make progress";
  // The progress thread stood in for the absent rank, about once a
  // millisecond (whether this provider needed it for these bytes or not).
  EXPECT_GT(callsWhileAway, 100u);
  ::unsetenv("HORA_OFI_PROVIDER");
}

// Endpoints of one domain share its registrations (registration_cache.h):
// a buffer two of them register for one owner is registered once, unless
// the provider binds each registration to one endpoint (FI_MR_ENDPOINT),
// where each endpoint keeps its own.
TEST(OfiRegistrations, EndpointsOfOneDomainShareThemWhereTheProviderAllows) {
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true, "lo");
  ::unsetenv("HORA_OFI_PROVIDER");
  ASSERT_TRUE(opening.device) << opening.why;
  OfiDevice& device = *opening.device;
  const bool perEndpoint = (device.info().domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
  auto first = device.createQueuePair();
  auto second = device.createQueuePair();
  std::vector<char> buffer(10000, 'r');
  const std::uint64_t owner = newMemoryOwner();
  const Region a = first->registerMemory(buffer.data(), buffer.size(), owner, Access::LocalRead);
  const Region b = second->registerMemory(buffer.data(), buffer.size(), owner, Access::LocalRead);
  if (perEndpoint) {
    EXPECT_EQ(device.registrations().registrations(), 0u);
    EXPECT_NE(a.localKey, b.localKey);
  } else {
    EXPECT_EQ(device.registrations().registrations(), 1u) << "two endpoints registered one buffer twice";
    EXPECT_EQ(a.localKey, b.localKey);
    EXPECT_EQ(a.remoteKey, b.remoteKey);
  }
  first->deregisterMemory(a);
  EXPECT_EQ(device.registrations().registrations(), perEndpoint ? 0u : 1u) << "the second endpoint still uses it";
  second->deregisterMemory(b);
  EXPECT_EQ(device.registrations().registrations(), 0u);
}

// Each queue pair is an endpoint of its own, and libfabric's rxm layer
// (under the tcp provider) sized one's buffer pools at about 84 MB, which
// 16 ranks of one host ran out of memory with. hora asks for smaller pools
// before it loads libfabric (fabric_library.cc); where the user set them
// (or another program in this process loaded libfabric first) this test
// cannot see hora's choice.
TEST(OfiMemory, AnEndpointOverTcpTakesAFewMegabytes) {
  for (const char* name : {"FI_OFI_RXM_MSG_RX_SIZE", "FI_OFI_RXM_MSG_TX_SIZE", "FI_OFI_RXM_BUFFER_SIZE"})
    if (const char* value = std::getenv(name); value != nullptr && std::string(value) != "16" &&
                                               std::string(value) != "4096")
      GTEST_SKIP() << name << "=" << value << " is set";
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true, "lo");
  ::unsetenv("HORA_OFI_PROVIDER");
  ASSERT_TRUE(opening.device) << opening.why;
  EXPECT_STREQ(std::getenv("FI_OFI_RXM_MSG_RX_SIZE"), "16");
  auto allocated = [] {
    const struct mallinfo2 info = ::mallinfo2();
    return info.uordblks + info.hblkhd;  // in use: heap chunks and mmapped blocks
  };
  const std::size_t before = allocated();
  std::vector<std::unique_ptr<QueuePair>> endpoints;
  for (int i = 0; i < 4; ++i) endpoints.push_back(opening.device->createQueuePair());
  const double perEndpointMB = static_cast<double>(allocated() - before) / 4 / 1e6;
  EXPECT_LT(perEndpointMB, 20.0) << "libfabric's pools per endpoint";
}

// An interface other than loopback with an IPv4 address, up: a second
// domain of libfabric's tcp provider beside "lo". Empty if there is none.
std::string anotherInterface() {
  for (const NetworkInterface& interface : listInterfaces())
    if (interface.address.family() == AF_INET && interface.name != "lo") return interface.name;
  return "";
}

// Multi-rail over libfabric: two domains of the tcp provider (loopback and
// another interface, both reachable here) as two rails. Every connection's
// queue pairs take turns over them, both rails carry queue pairs, and every
// collective's results are right. Protocol coverage of rails; on a cluster
// the rails are NICs (HORA_OFI_RAILS, or the topology's nearest NICs).
TEST(OfiRails, ConnectionsTakeTurnsOverTwoDomains) {
  const std::string other = anotherInterface();
  if (other.empty()) GTEST_SKIP() << "no interface but loopback with an IPv4 address: no second tcp domain";
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  ::setenv("HORA_TRANSPORT", "ofi", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  ::setenv("HORA_OFI_RAILS", other.c_str(), 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true, "lo");
  ::unsetenv("HORA_OFI_RAILS");
  ASSERT_TRUE(opening.device) << opening.why;
  ASSERT_EQ(opening.moreRails.size(), 1u) << "the tcp provider offers no domain " << other;
  auto first = std::make_shared<CountingDevice>(opening.device);
  auto second = std::make_shared<CountingDevice>(opening.moreRails.front());
  auto rails = combineRails({first, second});
  ASSERT_EQ(rails->rails(), 2u);
  useDevice(TransportKind::Ofi, rails);
  constexpr int kRanks = 3;
  testing::onEachRank(kRanks, [&](int rank, ncclComm_t comm) {
    checkEveryCollective(rank, kRanks, comm, {0, 1, 7, 65537});
  });
  useDevice(TransportKind::Ofi, nullptr);
  ::unsetenv("HORA_TRANSPORT");
  ::unsetenv("HORA_OFI_PROVIDER");
  // Each rank sends to and receives from its ring neighbours at least,
  // with a queue pair on each rail for every connection.
  EXPECT_GE(first->queuePairsCreated(), 2 * kRanks) << "the first rail (lo) carried no connections";
  EXPECT_GE(second->queuePairsCreated(), 2 * kRanks) << "the second rail (" << other << ") carried none";
}

// The domain a rank opens first follows the NICs nearest it
// (domain_choice.h), through the real provider: tcp's domains are
// interfaces, so loopback stands in for "the nearest NIC" here.
TEST(OfiDomainChoice, TheProviderOpensTheDomainOfTheNearestNic) {
  const std::string other = anotherInterface();
  if (other.empty()) GTEST_SKIP() << "no interface but loopback with an IPv4 address: one tcp domain only";
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  OfiOpening nearLoopback = openOfiDevice(/*allowSoftware=*/true, "", {}, {"lo"});
  OfiOpening nothingKnown = openOfiDevice(/*allowSoftware=*/true, "", {}, {});
  ::unsetenv("HORA_OFI_PROVIDER");
  ASSERT_TRUE(nearLoopback.device) << nearLoopback.why;
  ASSERT_TRUE(nothingKnown.device) << nothingKnown.why;
  EXPECT_STREQ(nearLoopback.device->info().domain_attr->name, "lo");
  EXPECT_STRNE(nothingKnown.device->info().domain_attr->name, "lo") << "without a nearest NIC, loopback comes last";
}

TEST(OfiRails, ARailTheProviderDoesNotOfferIsLeftOut) {
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  ::setenv("HORA_OFI_RAILS", "no-such-interface", 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true, "lo");
  ::unsetenv("HORA_OFI_RAILS");
  ::unsetenv("HORA_OFI_PROVIDER");
  ASSERT_TRUE(opening.device) << opening.why;
  EXPECT_TRUE(opening.moreRails.empty());
}

TEST(OfiProviders, HardwareOnesAreKnownByTheirCoreName) {
  for (const char* name : {"efa", "cxi", "verbs", "verbs;ofi_rxm", "psm3", "opx"})
    EXPECT_TRUE(isHardwareProvider(name)) << name;
  for (const char* name : {"tcp", "tcp;ofi_rxm", "sockets", "shm", "udp;ofi_rxd", "net", "efa-direct-ish"})
    EXPECT_FALSE(isHardwareProvider(name)) << name;
}

// Without HORA_TRANSPORT=ofi only a hardware provider is taken: here (no
// RDMA NIC) that means none, with the reason; on a machine with one, it
// must be a hardware provider.
TEST(OfiProviders, SoftwareProvidersAreNotChosenUnlessAskedFor) {
  ::unsetenv("HORA_OFI_PROVIDER");
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/false);
  if (opening.device) {
    EXPECT_TRUE(isHardwareProvider(opening.device->provider())) << opening.device->provider();
  } else {
    EXPECT_THAT(opening.why, HasSubstr("software providers"));
    EXPECT_THAT(opening.why, HasSubstr("tcp"));
  }
}

TEST(OfiProviders, AnUnknownProviderIsNotAvailableWithTheReason) {
  ::setenv("HORA_OFI_PROVIDER", "no-such-provider", 1);
  OfiOpening opening = openOfiDevice(/*allowSoftware=*/true);
  ::unsetenv("HORA_OFI_PROVIDER");
  EXPECT_FALSE(opening.device);
  EXPECT_THAT(opening.why, HasSubstr("fi_getinfo failed"));
}

}  // namespace
}  // namespace hora::transport::rdma::ofi
