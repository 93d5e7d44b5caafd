// Where hora's nccl.h semantics differ from NVIDIA's, because buffers are in
// host memory and calls return when done (docs/nccl-api.md lists these).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "local_comms.h"
#include "nccl_outcome.h"

namespace hora_api_test {
namespace {

TEST(HostSemantics, CallsWithANullStreamReturnWithTheResultInPlace) {
  LocalComms comms(2);
  std::vector<std::vector<int>> data = {{1, 2, 3}, {10, 20, 30}};
  comms.onEachRank([&](int rank) {
    ASSERT_EQ(ncclAllReduce(data[rank].data(), data[rank].data(), 3, ncclInt32, ncclSum, comms[rank], nullptr),
              ncclSuccess)
        << ncclGetLastError(nullptr);
    // No stream to synchronise: the result is there when the call returns.
    EXPECT_EQ(data[rank], (std::vector<int>{11, 22, 33}));
  });
}

TEST(HostSemantics, HostCommunicatorsHaveNoCudaDevice) {
  const int devices[2] = {3, 5};  // ignored: host ranks bind to no device
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, devices), ncclSuccess) << ncclGetLastError(nullptr);
  for (int rank = 0; rank < 2; ++rank) {
    int device = 0, userRank = -1;
    EXPECT_EQ(ncclCommCuDevice(comms[rank], &device), ncclSuccess);
    EXPECT_EQ(device, -1);
    EXPECT_EQ(ncclCommUserRank(comms[rank], &userRank), ncclSuccess);
    EXPECT_EQ(userRank, rank) << "ranks follow the order of the list";
  }
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(HostSemantics, PreMulSumScalarIsReadWhenTheOpIsCreated) {
  // Both residences name host memory here, read by ncclRedOpCreatePreMulSum;
  // changing the variable later does not change the op.
  for (ncclScalarResidence_t residence : {ncclScalarHostImmediate, ncclScalarDevice}) {
    LocalComms comms(1);
    double scalar = 3.0;
    ncclRedOp_t op;
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, residence, comms[0]), ncclSuccess);
    scalar = 100.0;
    std::vector<double> in = {1.0, -2.0}, out(2);
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), 2, ncclDouble, op, comms[0], nullptr), ncclSuccess)
        << ncclGetLastError(nullptr);
    EXPECT_EQ(out, (std::vector<double>{3.0, -6.0})) << "residence " << residence;
    EXPECT_EQ(ncclRedOpDestroy(op, comms[0]), ncclSuccess);
  }
}

}  // namespace
}  // namespace hora_api_test

namespace hora_api_test {
namespace {

// Two threads calling into one communicator at once (NCCL leaves it
// undefined): the second caller is refused with ncclInvalidUsage, and the
// communicator is broken on every rank, so the job stops instead of going
// on with ranks that may have paired different calls. Each rank has two
// threads hammering all-reduces; every thread must end, and every rank
// must end up refusing calls.
TEST(HostSemantics, TwoThreadsOnOneCommunicatorAreRefused) {
  constexpr int kRanks = 2;
  constexpr int kCalls = 2000;
  LocalComms comms(kRanks);
  std::atomic<int> refused{0};
  std::vector<std::string> refusals;
  std::mutex refusalsMutex;
  comms.onEachRank([&](int rank) {
    auto hammer = [&](long long contribution) {
      for (int i = 0; i < kCalls; ++i) {
        long long value = contribution;
        const ncclResult_t result = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr);
        if (result == ncclSuccess) continue;
        if (result == ncclInvalidUsage) {
          const std::string text = ncclGetLastError(comms[rank]);
          if (text.find("another thread") != std::string::npos) {
            ++refused;
            std::lock_guard<std::mutex> lock(refusalsMutex);
            refusals.push_back(text);
          }
        }
        return;  // the communicator is unusable from here on
      }
    };
    std::thread second(hammer, 2);
    hammer(1);
    second.join();
  });
  EXPECT_GE(refused.load(), 1) << "no rank noticed two threads on one communicator";
  if (!refusals.empty()) EXPECT_THAT(refusals.front(), ::testing::HasSubstr("unusable on every rank"));
  // Every rank's communicator now fails at once.
  for (int rank = 0; rank < kRanks; ++rank) {
    long long value = 1;
    EXPECT_NE(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess)
        << "rank " << rank;
  }
}

}  // namespace
}  // namespace hora_api_test
