// Every collective through hora's ib transport, its RDMA credit protocol
// running over the fake reliable-connected device (HORA_TRANSPORT=ib, ranks
// as threads of one process): 2 to 8 ranks at counts 0, 1 and primes, and
// two ranks at 64 MiB, each result compared with a reference computed here
// (every element type and reduction: matrix_over_rdma_test.cc).
// Protocol coverage only: nothing here has run on an InfiniBand or RoCE NIC.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <regex>
#include <thread>
#include <vector>

#include "every_collective.h"
#include "fake_queue_pair.h"
#include "transport/rdma/multi_rail.h"
#include "api/nccl_api.h"
#include "core/communicator.h"
#include "nccl.h"

namespace hora::transport::rdma {
namespace {

using testing::FakeDevice;
using testing::FakeOptions;
using testing::checkEveryCollective;
using testing::input;

class OverFakeRdma : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ::setenv("HORA_TRANSPORT", "ib", 1);
    ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
    FakeOptions options;
    options.delaySteps = 1;  // requests land a poll after they were posted
    device_ = std::make_shared<FakeDevice>(options, CreditGeometry{8, 64 * 1024});
    useDevice(TransportKind::Ib, device_);
  }
  void TearDown() override {
    useDevice(TransportKind::Ib, nullptr);
    ::unsetenv("HORA_TRANSPORT");
  }
  // Runs body(rank, comm) on one thread per rank over fresh communicators.
  template <typename Body>
  void onRanks(int nranks, Body body) {
    testing::onEachRank(nranks, body);
    EXPECT_GT(device_->queuePairsCreated(), 0) << "no connection went through the RDMA transport";
  }
  std::shared_ptr<FakeDevice> device_;
};

INSTANTIATE_TEST_SUITE_P(Ranks, OverFakeRdma, ::testing::Values(2, 3, 4, 5, 6, 7, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST_P(OverFakeRdma, EveryCollectiveMatchesTheReference) {
  const int n = GetParam();
  onRanks(n, [&](int rank, ncclComm_t comm) { checkEveryCollective(rank, n, comm, {0, 1, 7, 1031, 65537}); });
}

// NCCL_IB_QPS_PER_CONNECTION = 3: every connection's slots take turns over
// three queue pairs of different speeds.
TEST(OverFakeRdmaQueuePairs, EveryCollectiveOverThreeQueuePairsPerConnection) {
  ::setenv("HORA_TRANSPORT", "ib", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  FakeOptions options;
  options.delaySteps = 1;
  auto device = std::make_shared<FakeDevice>(options, CreditGeometry{8, 16 * 1024}, 3);
  useDevice(TransportKind::Ib, device);
  testing::onEachRank(3, [](int rank, ncclComm_t comm) { checkEveryCollective(rank, 3, comm, {0, 1, 1031, 65537}); });
  useDevice(TransportKind::Ib, nullptr);
  ::unsetenv("HORA_TRANSPORT");
  EXPECT_GE(device->queuePairsCreated(), 3 * 2 * 3) << "three queue pairs per connection, both ends";
}

// Multi-rail: two fake NICs (two separate fabrics, as two rails are)
// behind one device; every connection's queue pairs alternate between them,
// so each NIC carries part of every connection's bytes.
TEST(OverFakeRdmaRails, EveryCollectiveOverTwoRails) {
  ::setenv("HORA_TRANSPORT", "ib", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  FakeOptions options;
  options.delaySteps = 1;
  auto first = std::make_shared<FakeDevice>(options, CreditGeometry{8, 16 * 1024});
  options.delaySteps = 3;  // the second rail slower: completions out of grant order
  auto second = std::make_shared<FakeDevice>(options, CreditGeometry{8, 16 * 1024});
  auto rails = combineRails({first, second});
  ASSERT_EQ(rails->rails(), 2u);
  EXPECT_EQ(rails->queuePairsPerConnection(), 2u);
  useDevice(TransportKind::Ib, rails);
  testing::onEachRank(3, [](int rank, ncclComm_t comm) { checkEveryCollective(rank, 3, comm, {0, 1, 1031, 65537}); });
  useDevice(TransportKind::Ib, nullptr);
  ::unsetenv("HORA_TRANSPORT");
  EXPECT_EQ(first->queuePairsCreated(), second->queuePairsCreated()) << "one queue pair per rail, both ends";
  EXPECT_GT(first->bytesWritten(), 1u << 20);
  EXPECT_GT(second->bytesWritten(), 1u << 20);
  // Slots alternate between the rails: neither carries much more.
  const double ratio = static_cast<double>(first->bytesWritten()) / static_cast<double>(second->bytesWritten());
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 2.0);
}

TEST(OverFakeRdmaRails, OneDeviceIsItselfAndNoneIsNone) {
  auto only = std::make_shared<FakeDevice>();
  EXPECT_EQ(combineRails({only}), only);
  EXPECT_EQ(combineRails({}), nullptr);
  EXPECT_THROW(MultiRailDevice({}), Error);
  // More queue pairs than rails when a rail asks for them.
  auto three = std::make_shared<FakeDevice>(FakeOptions{}, CreditGeometry{}, 3);
  EXPECT_EQ(MultiRailDevice({only, three}).queuePairsPerConnection(), 3u);
  EXPECT_NE(MultiRailDevice({only, three}).name().find("2 rails"), std::string::npos);
}

// 64 MiB (and an odd element more) per rank block: every collective on two
// ranks, each result checked whole.
TEST(OverFakeRdmaLarge, EveryCollectiveAt64MiBOnTwoRanks) {
  ::setenv("HORA_TRANSPORT", "ib", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  auto device = std::make_shared<FakeDevice>();
  useDevice(TransportKind::Ib, device);
  constexpr std::size_t kCount = (std::size_t{64} << 20) / sizeof(std::int32_t) + 1;
  testing::onEachRank(2, [](int rank, ncclComm_t comm) { checkEveryCollective(rank, 2, comm, {kCount}); });
  EXPECT_GT(device->queuePairsCreated(), 0);
  useDevice(TransportKind::Ib, nullptr);
  ::unsetenv("HORA_TRANSPORT");
}

// Registered buffers over a fake device with 16 KiB slots.
class OverFakeRdmaRegistered : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("HORA_TRANSPORT", "ib", 1);
    ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
    useDevice(TransportKind::Ib, device);
  }
  void TearDown() override {
    useDevice(TransportKind::Ib, nullptr);
    ::unsetenv("HORA_TRANSPORT");
  }
  std::shared_ptr<FakeDevice> device = std::make_shared<FakeDevice>(FakeOptions{}, CreditGeometry{8, 16 * 1024});
};

// Buffers registered with ncclCommRegister go to the NIC without a copy
// (credit_stream.h): every rank's all-reduce, out of place and in place,
// and all-gather give exact sums and copies; writes read both ranks'
// registered buffers; and a connection registers each buffer once, however
// many calls send from it. (Which calls first send a buffer straight from
// program memory depends on timing, so the count of registrations in force
// after the first call is not a fixed number.)
TEST_F(OverFakeRdmaRegistered, RegisteredBuffersAreSentFromAndRegisteredOnce) {
  constexpr int kRanks = 3;
  constexpr std::size_t kCount = 100003;  // a prime: chunks of every rank differ
  std::vector<std::vector<std::int32_t>> send(kRanks, std::vector<std::int32_t>(kRanks * kCount));
  std::vector<std::vector<std::int32_t>> recv(kRanks, std::vector<std::int32_t>(kRanks * kCount));
  auto everyCall = [&](int rank, ncclComm_t comm) {
    auto& in = send[rank];
    auto& out = recv[rank];
    for (std::size_t i = 0; i < kCount; ++i) in[i] = input(rank, i);
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
    for (std::size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(out[i], input(0, i) + input(1, i) + input(2, i)) << "all-reduce, rank " << rank << ", element " << i;
    ASSERT_EQ(ncclAllReduce(in.data(), in.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
    ASSERT_TRUE(std::equal(in.begin(), in.begin() + kCount, out.begin())) << "in-place all-reduce, rank " << rank;
    for (std::size_t i = 0; i < kCount; ++i) in[i] = input(rank, i);
    ASSERT_EQ(ncclAllGather(in.data(), out.data(), kCount, ncclInt32, comm, nullptr), ncclSuccess);
    for (int r = 0; r < kRanks; ++r)
      for (std::size_t i = 0; i < kCount; i += 97) ASSERT_EQ(out[r * kCount + i], input(r, i)) << "all-gather";
  };
  testing::onEachRank(kRanks, [&](int rank, ncclComm_t comm) {
    void* handles[2];
    ASSERT_EQ(ncclCommRegister(comm, send[rank].data(), send[rank].size() * 4, &handles[0]), ncclSuccess);
    ASSERT_EQ(ncclCommRegister(comm, recv[rank].data(), recv[rank].size() * 4, &handles[1]), ncclSuccess);
    for (int round = 0; round < 4; ++round) everyCall(rank, comm);
    for (void* handle : handles) EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
  });
  for (int r = 0; r < kRanks; ++r)
    EXPECT_GT(device->bytesWrittenFrom(send[r].data()) + device->bytesWrittenFrom(recv[r].data()), 0u)
        << "no write read rank " << r << "'s registered buffers";
  EXPECT_EQ(device->mostRegistrationsOfOneRange(), 1) << "a queue pair registered the same memory again";
}

// ncclCommDeregister releases what the connections registered of the
// buffer at once, so its pages are not pinned until a connection's next
// send (which may never come): the device's registrations in force fall
// back to what they were before the buffer was registered, with no call
// made in between.
TEST_F(OverFakeRdmaRegistered, DeregisteringReleasesTheNicRegistrationsAtOnce) {
  constexpr int kRanks = 2;
  constexpr std::size_t kCount = 65537;
  std::vector<std::vector<std::int32_t>> data(kRanks, std::vector<std::int32_t>(kCount));
  std::barrier sync(kRanks);
  std::size_t before = 0, registered = 0, after = 0;
  // EXPECT, not ASSERT, inside: a rank that returned early would leave the
  // other waiting at the barrier for ever.
  testing::onEachRank(kRanks, [&](int rank, ncclComm_t comm) {
    auto& buffer = data[rank];
    // Connections first (their staging is registered once, for good).
    for (std::size_t i = 0; i < kCount; ++i) buffer[i] = input(rank, i);
    EXPECT_EQ(ncclAllReduce(buffer.data(), buffer.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
    sync.arrive_and_wait();
    if (rank == 0) before = device->registrations();
    sync.arrive_and_wait();
    void* handle = nullptr;
    EXPECT_EQ(ncclCommRegister(comm, buffer.data(), buffer.size() * sizeof(std::int32_t), &handle), ncclSuccess);
    for (std::size_t i = 0; i < kCount; ++i) buffer[i] = input(rank, i);
    EXPECT_EQ(ncclAllReduce(buffer.data(), buffer.data(), kCount, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < kCount; ++i) wrong += buffer[i] != input(0, i) + input(1, i);
    EXPECT_EQ(wrong, 0u) << "rank " << rank;
    sync.arrive_and_wait();
    if (rank == 0) registered = device->registrations();
    sync.arrive_and_wait();
    EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
    sync.arrive_and_wait();
    if (rank == 0) after = device->registrations();
    sync.arrive_and_wait();
  });
  EXPECT_GT(registered, before) << "no connection registered the program's buffer: nothing was tested";
  EXPECT_EQ(after, before) << "registrations of deregistered buffers are still in force";
}

// Without an RDMA device, HORA_TRANSPORT=ib cannot be honoured: no error,
// and each pair takes the transport it would have had without the
// variable. Between ranks of one host that is shared memory, or TCP where
// shared memory is off (as between hosts). Results are checked.
class WithoutRdmaDevice : public ::testing::TestWithParam<bool> {};

TEST_P(WithoutRdmaDevice, IbFallsBackToTheNextTransport) {
  const bool shmDisabled = GetParam();
  ::setenv("HORA_TRANSPORT", "ib", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  if (shmDisabled) ::setenv("NCCL_SHM_DISABLE", "1", 1);
  // No device on any machine: no port this filter allows (a NIC of the
  // machine's own would otherwise be opened), and no GPU peer access (two
  // GPUs would take p2p).
  ::setenv("NCCL_IB_HCA", "=no-such-hca", 1);
  ::setenv("NCCL_P2P_DISABLE", "1", 1);
  useDevice(TransportKind::Ib, nullptr);
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  for (const char* name : {"NCCL_SHM_DISABLE", "NCCL_IB_HCA", "NCCL_P2P_DISABLE", "HORA_TRANSPORT"}) ::unsetenv(name);
  const TransportKind expected = shmDisabled ? TransportKind::Tcp : TransportKind::Shm;
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(transportName(comms[r]->impl->transportTo(1 - r)), transportName(expected)) << "rank " << r;
  std::vector<std::int32_t> data[2] = {std::vector<std::int32_t>(1031, 1), std::vector<std::int32_t>(1031, 2)};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      EXPECT_EQ(ncclAllReduce(data[r].data(), data[r].data(), 1031, ncclInt32, ncclSum, comms[r], nullptr),
                ncclSuccess);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(std::count(data[r].begin(), data[r].end(), 3), 1031) << "rank " << r;
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);
}

INSTANTIATE_TEST_SUITE_P(SharedMemory, WithoutRdmaDevice, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "ShmDisabledSoTcp" : "OneHostSoShm"; });

// A rank that leaves (abort) in the middle: the others' waits on their RDMA
// connections end with an error naming it, through the lifeline.
TEST(OverFakeRdmaFailure, ARankThatLeavesIsNamedByTheOthers) {
  ::setenv("HORA_TRANSPORT", "ib", 1);
  ::setenv("HORA_SOCKET_IFNAME", "lo", 1);
  ::setenv("HORA_TIMEOUT", "20", 1);
  useDevice(TransportKind::Ib, std::make_shared<FakeDevice>());
  constexpr int kRanks = 3;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> data(1 << 16, 1.0f);
      if (r == 2) {
        for (int i = 0; i < 3; ++i) ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comms[r], nullptr);
        ncclCommAbort(comms[r]);
        return;
      }
      for (int i = 0; i < 1000; ++i)
        if (ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comms[r], nullptr) != ncclSuccess) {
          errors[r] = ncclGetLastError(comms[r]);
          break;
        }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(std::regex_search(errors[r], std::regex("rank 2 \\([^)]*\\) failed first"))) << "rank " << r << ": " << errors[r];
    ncclCommDestroy(comms[r]);
  }
  useDevice(TransportKind::Ib, nullptr);
  ::unsetenv("HORA_TRANSPORT");
}

}  // namespace
}  // namespace hora::transport::rdma
