// Where hora's nccl.h semantics differ from NVIDIA's, because buffers are in
// host memory and calls return when done (docs/nccl-api.md lists these).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
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

// ncclScalarHostImmediate: the scalar is read by ncclRedOpCreatePreMulSum;
// changing the variable later does not change the op.
TEST(HostSemantics, HostImmediatePreMulSumScalarIsReadWhenTheOpIsCreated) {
  LocalComms comms(1);
  double scalar = 3.0;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, comms[0]), ncclSuccess);
  scalar = 100.0;
  std::vector<double> in = {1.0, -2.0}, out(2);
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), 2, ncclDouble, op, comms[0], nullptr), ncclSuccess)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(out, (std::vector<double>{3.0, -6.0}));
  EXPECT_EQ(ncclRedOpDestroy(op, comms[0]), ncclSuccess);
}

// ncclScalarDevice: the scalar stays where the program keeps it and is read
// each time a collective with the op runs, as NCCL's kernels read it (so
// that work ordered before the collective may write it). On host buffers
// it is read as the collective starts.
TEST(HostSemantics, DevicePreMulSumScalarIsReadWhenEachCollectiveRuns) {
  LocalComms comms(2);
  std::int32_t scalars[2] = {3, 3};
  ncclRedOp_t ops[2];
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], &scalars[r], ncclInt32, ncclScalarDevice, comms[r]), ncclSuccess);
  for (std::int32_t value : {5, -7}) {
    for (std::int32_t& scalar : scalars) scalar = value;
    std::vector<std::int32_t> in[2] = {{1, 2, 3}, {10, 20, 30}}, out[2] = {std::vector<std::int32_t>(3),
                                                                             std::vector<std::int32_t>(3)};
    std::thread ranks[2];
    ncclResult_t results[2] = {ncclInternalError, ncclInternalError};
    for (int r = 0; r < 2; ++r)
      ranks[r] = std::thread([&, r] {
        results[r] = ncclAllReduce(in[r].data(), out[r].data(), 3, ncclInt32, ops[r], comms[r], nullptr);
      });
    for (auto& rank : ranks) rank.join();
    const std::vector<std::int32_t> want = {11 * value, 22 * value, 33 * value};
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(results[r], ncclSuccess) << ncclGetLastError(comms[r]);
      EXPECT_EQ(out[r], want) << "rank " << r << ", scalar " << value;
    }
  }
  for (int r = 0; r < 2; ++r) EXPECT_EQ(ncclRedOpDestroy(ops[r], comms[r]), ncclSuccess);
}

}  // namespace
}  // namespace hora_api_test

namespace hora_api_test {
namespace {

// Two threads calling into one communicator at once (NCCL leaves it
// undefined): the second caller is refused with ncclInvalidUsage, and the
// communicator is broken on every rank, so the job stops instead of going
// on with ranks that may have paired different calls. To make the overlap
// certain, rank 1 takes no part at first: rank 0's first all-reduce waits
// for it, holding the communicator, when rank 0's second thread calls.
TEST(HostSemantics, TwoThreadsOnOneCommunicatorAreRefused) {
  LocalComms comms(2);
  ncclResult_t first = ncclInternalError, second = ncclInternalError;
  std::string secondText;
  std::thread waiting([&] {
    long long value = 1;
    first = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[0], nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  long long value = 2;
  second = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[0], nullptr);
  secondText = ncclGetLastError(comms[0]);
  waiting.join();
  // Whichever thread came second was refused; the other's call failed
  // when the communicator broke (rank 1 never took part).
  EXPECT_NE(first, ncclSuccess);
  EXPECT_NE(second, ncclSuccess);
  EXPECT_TRUE(first == ncclInvalidUsage || second == ncclInvalidUsage) << first << " " << second;
  if (second == ncclInvalidUsage) {
    EXPECT_THAT(secondText, ::testing::HasSubstr("another thread"));
    EXPECT_THAT(secondText, ::testing::HasSubstr("unusable on every rank"));
  }
  // Rank 1 learns it from rank 0's closed connections: its first call may
  // still complete on what rank 0's first call had already sent, the next
  // cannot. Rank 0 stays broken.
  long long other = 1;
  ncclResult_t rank1 = ncclAllReduce(&other, &other, 1, ncclInt64, ncclSum, comms[1], nullptr);
  if (rank1 == ncclSuccess) rank1 = ncclAllReduce(&other, &other, 1, ncclInt64, ncclSum, comms[1], nullptr);
  EXPECT_NE(rank1, ncclSuccess);
  EXPECT_NE(ncclAllReduce(&other, &other, 1, ncclInt64, ncclSum, comms[0], nullptr), ncclSuccess);
}

}  // namespace
}  // namespace hora_api_test
