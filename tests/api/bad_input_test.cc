// Bad input to the nccl.h API: each call fails with the documented result
// code and a ncclGetLastError text that says what is wrong, and leaves the
// communicator usable. Ranks are threads of this process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "local_comms.h"
#include "support/program_run.h"
#include "support/scoped_env.h"
#include "nccl_outcome.h"

namespace hora_api_test {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kCount = 16;

// One rank: any call that passes its argument checks completes at once, so
// a check that wrongly lets bad input through cannot hang the test.
class SingleRank : public ::testing::Test {
 protected:
  LocalComms comms_{1};
  ncclComm_t comm() const { return comms_[0]; }
  std::vector<float> in_ = std::vector<float>(kCount, 1.0f);
  std::vector<float> out_ = std::vector<float>(kCount, 0.0f);
};

struct NamedCall {
  const char* name;
  std::function<ncclResult_t()> call;
};

TEST_F(SingleRank, NullBufferWithNonZeroCountIsRefused) {
  float* in = in_.data();
  float* out = out_.data();
  ncclComm_t c = comm();
  const std::vector<std::pair<NamedCall, Words>> cases = {
      {{"ncclAllReduce", [&] { return ncclAllReduce(nullptr, out, kCount, ncclFloat, ncclSum, c, nullptr); }},
       {"ncclAllReduce", "sendbuff", "NULL"}},
      {{"ncclAllReduce", [&] { return ncclAllReduce(in, nullptr, kCount, ncclFloat, ncclSum, c, nullptr); }},
       {"ncclAllReduce", "recvbuff", "NULL"}},
      {{"ncclBroadcast", [&] { return ncclBroadcast(nullptr, out, kCount, ncclFloat, 0, c, nullptr); }},
       {"ncclBroadcast", "sendbuff", "NULL"}},
      {{"ncclBcast", [&] { return ncclBcast(nullptr, kCount, ncclFloat, 0, c, nullptr); }},
       {"NULL"}},
      {{"ncclReduce", [&] { return ncclReduce(in, nullptr, kCount, ncclFloat, ncclSum, 0, c, nullptr); }},
       {"ncclReduce", "recvbuff", "NULL"}},
      {{"ncclAllGather", [&] { return ncclAllGather(nullptr, out, kCount, ncclFloat, c, nullptr); }},
       {"ncclAllGather", "sendbuff", "NULL"}},
      {{"ncclReduceScatter",
        [&] { return ncclReduceScatter(in, nullptr, kCount, ncclFloat, ncclSum, c, nullptr); }},
       {"ncclReduceScatter", "recvbuff", "NULL"}},
      {{"ncclAlltoAll", [&] { return ncclAlltoAll(nullptr, out, kCount, ncclFloat, c, nullptr); }},
       {"ncclAlltoAll", "sendbuff", "NULL"}},
      {{"ncclGather", [&] { return ncclGather(in, nullptr, kCount, ncclFloat, 0, c, nullptr); }},
       {"ncclGather", "recvbuff", "NULL"}},
      {{"ncclScatter", [&] { return ncclScatter(nullptr, out, kCount, ncclFloat, 0, c, nullptr); }},
       {"ncclScatter", "sendbuff", "NULL"}},
      {{"ncclSend", [&] { return ncclSend(nullptr, kCount, ncclFloat, 0, c, nullptr); }},
       {"ncclSend", "sendbuff", "NULL"}},
      {{"ncclRecv", [&] { return ncclRecv(nullptr, kCount, ncclFloat, 0, c, nullptr); }},
       {"ncclRecv", "recvbuff", "NULL"}},
  };
  for (const auto& [named, words] : cases)
    EXPECT_THAT(outcomeOf(named.call()), FailsWith(ncclInvalidArgument, words)) << named.name;
}

TEST_F(SingleRank, NullBufferWithZeroCountIsANoOp) {
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, comm(), nullptr), ncclSuccess);
  EXPECT_EQ(ncclBroadcast(nullptr, nullptr, 0, ncclInt8, 0, comm(), nullptr), ncclSuccess);
}

TEST_F(SingleRank, InvalidDatatypeIsRefused) {
  for (int type : {42, -1, static_cast<int>(ncclNumTypes)}) {
    auto datatype = static_cast<ncclDataType_t>(type);
    EXPECT_THAT(outcomeOf(ncclAllReduce(in_.data(), out_.data(), kCount, datatype, ncclSum, comm(), nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclAllReduce", "datatype", std::to_string(type)}));
    EXPECT_THAT(outcomeOf(ncclSend(in_.data(), kCount, datatype, 0, comm(), nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclSend", "datatype", std::to_string(type)}));
  }
  float scalar = 2.0f;
  ncclRedOp_t op;
  EXPECT_THAT(outcomeOf(ncclRedOpCreatePreMulSum(&op, &scalar, static_cast<ncclDataType_t>(42),
                                                 ncclScalarHostImmediate, comm())),
              FailsWith(ncclInvalidArgument, Words{"ncclRedOpCreatePreMulSum", "datatype", "42"}));
}

TEST_F(SingleRank, InvalidReductionOpIsRefused) {
  auto op = static_cast<ncclRedOp_t>(99);
  EXPECT_THAT(outcomeOf(ncclAllReduce(in_.data(), out_.data(), kCount, ncclFloat, op, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclAllReduce", "reduction op 99"}));
  EXPECT_THAT(outcomeOf(ncclReduce(in_.data(), out_.data(), kCount, ncclFloat, op, 0, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclReduce", "reduction op 99"}));
  EXPECT_THAT(outcomeOf(ncclRedOpDestroy(ncclSum, comm())),
              FailsWith(ncclInvalidArgument, Words{"ncclRedOpDestroy", "built-in"}));
  EXPECT_THAT(outcomeOf(ncclRedOpDestroy(static_cast<ncclRedOp_t>(-7), comm())),
              FailsWith(ncclInvalidArgument, Words{"ncclRedOpDestroy", "-7 is not a reduction op"}));
}

TEST_F(SingleRank, DestroyedPreMulSumHandleIsRefused) {
  float scalar = 0.5f;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm()), ncclSuccess);
  ASSERT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  ASSERT_EQ(ncclRedOpDestroy(op, comm()), ncclSuccess);
  const std::string handle = std::to_string(static_cast<int>(op));
  EXPECT_THAT(outcomeOf(ncclAllReduce(in_.data(), out_.data(), kCount, ncclFloat, op, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclAllReduce", "reduction op " + handle}));
  EXPECT_THAT(outcomeOf(ncclRedOpDestroy(op, comm())),
              FailsWith(ncclInvalidArgument, Words{"ncclRedOpDestroy", handle, "destroyed"}));
}

TEST_F(SingleRank, PreMulSumHandleUsedWithAnotherTypeIsRefused) {
  float scalar = 0.5f;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm()), ncclSuccess);
  std::vector<double> in(kCount, 1.0), out(kCount);
  EXPECT_THAT(outcomeOf(ncclAllReduce(in.data(), out.data(), kCount, ncclDouble, op, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"float", "double"}));
  EXPECT_EQ(ncclRedOpDestroy(op, comm()), ncclSuccess);
}

TEST_F(SingleRank, CountThatOverflowsTheAddressSpaceIsRefused) {
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  EXPECT_THAT(outcomeOf(ncclAllReduce(in_.data(), out_.data(), huge, ncclFloat, ncclSum, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclAllReduce", "count", "overflow"}));
  EXPECT_THAT(outcomeOf(ncclBroadcast(in_.data(), out_.data(), huge, ncclInt8, 0, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclBroadcast", "overflow"}));
  EXPECT_THAT(outcomeOf(ncclSend(in_.data(), huge / 4, ncclFloat64, 0, comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclSend", "overflow"}));
}

TEST_F(SingleRank, PartlyOverlappingBuffersOfAReductionAreRefused) {
  // One element apart: in place would be the same pointer.
  EXPECT_THAT(outcomeOf(ncclAllReduce(in_.data(), in_.data() + 1, kCount - 1, ncclFloat, ncclSum,
                                      comm(), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"AllReduce", "overlap", "not in place"}));
}

// Refused at the call, before anything runs: the communicator stays usable,
// alone and inside a group (whose ncclGroupEnd then fails and runs nothing).
TEST(BadInput, BuffersOverlappingOtherThanInPlaceAreRefused) {
  std::vector<float> buffer(4 * kCount);
  float* b = buffer.data();
  struct OverlapCase {
    const char* name;
    std::function<ncclResult_t(ncclComm_t)> call;
    Words words;
  };
  const std::vector<OverlapCase> cases = {
      {"ncclAllGather", [&](ncclComm_t c) { return ncclAllGather(b + 1, b, kCount, ncclFloat, c, nullptr); },
       {"AllGather", "not in place", "block `rank` of the receive buffer"}},
      {"ncclReduceScatter",
       [&](ncclComm_t c) { return ncclReduceScatter(b, b + 1, kCount, ncclFloat, ncclSum, c, nullptr); },
       {"ReduceScatter", "not in place"}},
      {"ncclBroadcast", [&](ncclComm_t c) { return ncclBroadcast(b, b + 3, kCount, ncclFloat, 0, c, nullptr); },
       {"Broadcast", "not in place"}},
      {"ncclAlltoAll", [&](ncclComm_t c) { return ncclAlltoAll(b, b + 2, kCount, ncclFloat, c, nullptr); },
       {"AllToAll", "no in-place form"}},
      {"ncclGather", [&](ncclComm_t c) { return ncclGather(b + 2, b, kCount, ncclFloat, 0, c, nullptr); },
       {"Gather", "not in place"}},
      {"ncclScatter", [&](ncclComm_t c) { return ncclScatter(b, b + 5, kCount, ncclFloat, 0, c, nullptr); },
       {"Scatter", "not in place"}},
  };
  LocalComms comms{1};
  std::vector<float> in(kCount, 2.0f), out(kCount, 0.0f);
  auto usable = [&] {
    std::fill(out.begin(), out.end(), 0.0f);
    return ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr) == ncclSuccess &&
           out == in;
  };
  for (const OverlapCase& overlap : cases) {
    EXPECT_THAT(outcomeOf(overlap.call(comms[0])), FailsWith(ncclInvalidArgument, overlap.words))
        << overlap.name;
    EXPECT_TRUE(usable()) << overlap.name << ": " << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(overlap.call(comms[0]), ncclInvalidArgument) << overlap.name << " in a group";
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument) << overlap.name << " in a group";
    EXPECT_TRUE(usable()) << overlap.name << " after a group: " << ncclGetLastError(nullptr);
  }
}

// Refused where the call enters, on the rank whose buffer it is: its call
// fails, alone or in a group, and both ranks' communicators stay usable.
// A buffer a rank does not use (a reduce's output off the root) may be
// anything.
TEST(BadInput, BuffersNotAlignedToTheirElementAreRefusedAtTheCall) {
  LocalComms comms(2);
  std::vector<float> storage(4 * kCount + 1);
  float* aligned = storage.data();
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(storage.data() + 2 * kCount) + 2);
  struct MisalignedCase {
    const char* name;
    std::function<ncclResult_t(ncclComm_t)> call;
    Words words;
  };
  const std::vector<MisalignedCase> cases = {
      {"ncclAllReduce",
       [&](ncclComm_t c) { return ncclAllReduce(aligned, misaligned, kCount, ncclFloat, ncclSum, c, nullptr); },
       {"rank 1", "AllReduce", "receive buffer", "not aligned", "4-byte float"}},
      {"ncclAllGather", [&](ncclComm_t c) { return ncclAllGather(misaligned, aligned, 1, ncclFloat, c, nullptr); },
       {"rank 1", "AllGather", "send buffer", "not aligned"}},
      {"ncclBroadcast",
       [&](ncclComm_t c) { return ncclBroadcast(aligned, misaligned, kCount, ncclFloat, 0, c, nullptr); },
       {"rank 1", "Broadcast", "receive buffer"}},
      {"ncclRecv", [&](ncclComm_t c) { return ncclRecv(misaligned, kCount, ncclFloat, 0, c, nullptr); },
       {"rank 1", "Recv", "receive buffer", "not aligned"}},
  };
  auto usable = [&] {
    std::vector<float> in0(kCount, 1.0f), in1(kCount, 2.0f), out0(kCount), out1(kCount);
    if (ncclGroupStart() != ncclSuccess) return false;
    ncclAllReduce(in0.data(), out0.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr);
    ncclAllReduce(in1.data(), out1.data(), kCount, ncclFloat, ncclSum, comms[1], nullptr);
    return ncclGroupEnd() == ncclSuccess && out0 == std::vector<float>(kCount, 3.0f) && out0 == out1;
  };
  for (const MisalignedCase& bad : cases) {
    EXPECT_THAT(outcomeOf(bad.call(comms[1])), FailsWith(ncclInvalidArgument, bad.words)) << bad.name;
    EXPECT_TRUE(usable()) << bad.name << ": " << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(bad.call(comms[1]), ncclInvalidArgument) << bad.name << " in a group";
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument) << bad.name << " in a group";
    EXPECT_TRUE(usable()) << bad.name << " after a group: " << ncclGetLastError(nullptr);
  }
  // Off the root, a reduce's output is not used: a misaligned one is fine.
  std::vector<float> in0(kCount, 1.0f), in1(kCount, 5.0f), out0(kCount);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclReduce(in0.data(), out0.data(), kCount, ncclFloat, ncclSum, 0, comms[0], nullptr);
  ncclReduce(in1.data(), misaligned, kCount, ncclFloat, ncclSum, 0, comms[1], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(out0, ::testing::Each(6.0f));
}

TEST(BadInput, CountTimesRanksThatOverflowsIsRefused) {
  // Each count fits, but the all-gather output (count x nranks) does not.
  LocalComms comms(2);
  std::vector<float> in(kCount), out(2 * kCount);
  const std::size_t count = std::numeric_limits<std::size_t>::max() / 4 / 2 + 1;
  EXPECT_THAT(outcomeOf(ncclAllGather(in.data(), out.data(), count, ncclFloat, comms[0], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclAllGather", "overflow"}));
  EXPECT_THAT(outcomeOf(ncclReduceScatter(in.data(), out.data(), count, ncclFloat, ncclSum, comms[0], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclReduceScatter", "overflow"}));
}

TEST(BadInput, RootOrPeerOutsideTheCommunicatorIsRefused) {
  LocalComms comms(2);
  ncclComm_t c = comms[0];
  std::vector<float> in(2 * kCount), out(2 * kCount);
  for (int bad : {-1, 2, 1000}) {
    const std::string said = std::to_string(bad);
    EXPECT_THAT(outcomeOf(ncclBroadcast(in.data(), out.data(), kCount, ncclFloat, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclBroadcast", "root " + said, "[0, 2)"}));
    EXPECT_THAT(outcomeOf(ncclReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclReduce", "root " + said}));
    EXPECT_THAT(outcomeOf(ncclGather(in.data(), out.data(), kCount, ncclFloat, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclGather", "root " + said}));
    EXPECT_THAT(outcomeOf(ncclScatter(in.data(), out.data(), kCount, ncclFloat, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclScatter", "root " + said}));
    EXPECT_THAT(outcomeOf(ncclSend(in.data(), kCount, ncclFloat, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclSend", "peer " + said, "[0, 2)"}));
    EXPECT_THAT(outcomeOf(ncclRecv(out.data(), kCount, ncclFloat, bad, c, nullptr)),
                FailsWith(ncclInvalidArgument, Words{"ncclRecv", "peer " + said}));
  }
}

TEST(BadInput, GarbageUniqueIdIsRefused) {
  ncclUniqueId zeroes;
  std::memset(zeroes.internal, 0, sizeof(zeroes.internal));
  ncclUniqueId random;
  std::mt19937 generator(12345);  // fixed: the test must not depend on luck
  for (char& byte : random.internal) byte = static_cast<char>(generator());
  for (const ncclUniqueId& id : {zeroes, random}) {
    ncclComm_t comm = reinterpret_cast<ncclComm_t>(0x1);  // must be overwritten
    EXPECT_THAT(outcomeOf(ncclCommInitRank(&comm, 1, id, 0)),
                FailsWith(ncclInvalidArgument, Words{"ncclCommInitRank", "ncclUniqueId", "not valid"}));
    EXPECT_EQ(comm, nullptr) << "a failed init must leave a NULL communicator";
  }
}

TEST(BadInput, NullCommunicatorIsRefused) {
  float value = 1.0f;
  int number = 0;
  EXPECT_THAT(outcomeOf(ncclAllReduce(&value, &value, 1, ncclFloat, ncclSum, nullptr, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclAllReduce", "communicator", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclSend(&value, 1, ncclFloat, 0, nullptr, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclSend", "communicator", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommCount(nullptr, &number)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommCount", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommUserRank(nullptr, &number)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommUserRank", "NULL"}));
  ncclResult_t async;
  EXPECT_THAT(outcomeOf(ncclCommGetAsyncError(nullptr, &async)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommGetAsyncError", "NULL"}));
  // As with NVIDIA's library, destroying or aborting NULL does nothing.
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
}

TEST(BadInput, NullOutputPointersAreRefused) {
  LocalComms comms(1);
  EXPECT_THAT(outcomeOf(ncclCommCount(comms[0], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommCount", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommCuDevice(comms[0], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommCuDevice", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclGetVersion(nullptr)), FailsWith(ncclInvalidArgument, Words{"ncclGetVersion", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclGetUniqueId(nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclGetUniqueId", "NULL"}));
}

TEST(BadInput, UseAfterDestroyIsRefusedNotACrash) {
  // hora keeps a registry of live communicators: a destroyed handle is
  // recognised instead of dereferenced.
  for (bool abort : {false, true}) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
    ASSERT_EQ(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm), ncclSuccess);
    float value = 1.0f;
    int number = 0;
    const Words dead = {"not a live communicator"};
    EXPECT_THAT(outcomeOf(ncclAllReduce(&value, &value, 1, ncclFloat, ncclSum, comm, nullptr)),
                FailsWith(ncclInvalidArgument, dead));
    EXPECT_THAT(outcomeOf(ncclCommCount(comm, &number)), FailsWith(ncclInvalidArgument, dead));
    EXPECT_THAT(outcomeOf(ncclCommFinalize(comm)), FailsWith(ncclInvalidArgument, dead));
    EXPECT_THAT(outcomeOf(ncclCommDestroy(comm)), FailsWith(ncclInvalidArgument, dead));
    EXPECT_THAT(outcomeOf(ncclCommAbort(comm)), FailsWith(ncclInvalidArgument, dead));
  }
}

// A destroyed handle's address is not given to the next communicators, so
// a second destroy (or a watchdog's abort after the program's destroy)
// is refused instead of destroying a communicator made since.
TEST(BadInput, ADestroyedHandleNeverNamesALaterCommunicator) {
  // Made and destroyed on this thread, where the allocator would hand the
  // freed memory to the next handle of the same size.
  auto makeOne = [](ncclComm_t* comm) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  };
  ncclComm_t first = nullptr;
  makeOne(&first);
  ASSERT_EQ(ncclCommDestroy(first), ncclSuccess);
  std::vector<ncclComm_t> later(16, nullptr);
  for (ncclComm_t& comm : later) {
    makeOne(&comm);
    EXPECT_NE(comm, first);
  }
  EXPECT_THAT(outcomeOf(ncclCommDestroy(first)), FailsWith(ncclInvalidArgument, Words{"not a live communicator"}));
  for (ncclComm_t comm : later) {
    int count = 0;
    EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
}

TEST(BadInput, InitWithInvalidSizeOrRankIsRefused) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_THAT(outcomeOf(ncclCommInitRank(&comm, 0, id, 0)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitRank", "nranks", "0"}));
  EXPECT_THAT(outcomeOf(ncclCommInitRank(&comm, -3, id, 0)),
              FailsWith(ncclInvalidArgument, Words{"nranks", "-3"}));
  EXPECT_THAT(outcomeOf(ncclCommInitRank(&comm, 2, id, 2)),
              FailsWith(ncclInvalidArgument, Words{"rank 2", "[0, 2)"}));
  EXPECT_THAT(outcomeOf(ncclCommInitRank(&comm, 2, id, -1)),
              FailsWith(ncclInvalidArgument, Words{"rank -1", "[0, 2)"}));
  EXPECT_THAT(outcomeOf(ncclCommInitRank(nullptr, 1, id, 0)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitRank", "NULL"}));
  // As NCCL: no devices, no communicators; fewer is refused.
  EXPECT_EQ(ncclCommInitAll(&comm, 0, nullptr), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommInitAll(&comm, -1, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitAll", "ndev", "-1"}));
  EXPECT_THAT(outcomeOf(ncclCommInitAll(nullptr, 2, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitAll", "NULL"}));
}

TEST(BadInput, InitWithAnUninitialisedConfigIsRefused) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t garbage;
  std::memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_THAT(outcomeOf(ncclCommInitRankConfig(&comm, 1, id, 0, &garbage)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitRankConfig", "NCCL_CONFIG_INITIALIZER"}));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 7;
  EXPECT_THAT(outcomeOf(ncclCommInitRankConfig(&comm, 1, id, 0, &config)),
              FailsWith(ncclInvalidArgument, Words{"blocking", "7"}));
}

TEST(BadInput, ConfigFieldsAreCheckedAsNcclChecksThem) {
  // Each value NCCL 2.28 refuses, one field at a time.
  struct Bad {
    const char* field;
    void (*set)(ncclConfig_t&);
  };
  const Bad bad[] = {
      {"cgaClusterSize", [](ncclConfig_t& c) { c.cgaClusterSize = -2; }},
      {"minCTAs", [](ncclConfig_t& c) { c.minCTAs = 0; }},
      {"minCTAs", [](ncclConfig_t& c) { c.maxCTAs = 0; }},
      {"minCTAs", [](ncclConfig_t& c) { c.minCTAs = 4; }},  // above an unset maxCTAs, as in NCCL
      {"minCTAs", [](ncclConfig_t& c) {
         c.minCTAs = 8;
         c.maxCTAs = 4;
       }},
      {"splitShare", [](ncclConfig_t& c) { c.splitShare = 2; }},
      {"collnetEnable", [](ncclConfig_t& c) { c.collnetEnable = 2; }},
      {"CTAPolicy", [](ncclConfig_t& c) { c.CTAPolicy = 99; }},
      {"shrinkShare", [](ncclConfig_t& c) { c.shrinkShare = 2; }},
      {"nvlsCTAs", [](ncclConfig_t& c) { c.nvlsCTAs = 0; }},
      {"nChannelsPerNetPeer", [](ncclConfig_t& c) { c.nChannelsPerNetPeer = 65; }},
      {"nvlinkCentricSched", [](ncclConfig_t& c) { c.nvlinkCentricSched = 2; }},
  };
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  for (const Bad& b : bad) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    b.set(config);
    ncclComm_t comm = nullptr;
    EXPECT_THAT(outcomeOf(ncclCommInitRankConfig(&comm, 1, id, 0, &config)),
                FailsWith(ncclInvalidArgument, Words{"ncclCommInitRankConfig", b.field}));
  }
  // Accepted: sensible values, and a field newer than the caller's header
  // (its version), which NCCL leaves at its default whatever it holds.
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  good.minCTAs = 2;
  good.maxCTAs = 16;
  good.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  good.nChannelsPerNetPeer = 64;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &good), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
  old.version = NCCL_VERSION(2, 13, 0);
  old.blocking = 7;  // not in a 2.13 header: the default, blocking
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &old), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  // A split this rank takes no part in does not read its config.
  LocalComms parent(1);
  ncclConfig_t garbage = NCCL_CONFIG_INITIALIZER;
  garbage.blocking = 5;
  ncclComm_t none = parent[0];
  EXPECT_EQ(ncclCommSplit(parent[0], NCCL_SPLIT_NOCOLOR, 0, &none, &garbage), ncclSuccess);
  EXPECT_EQ(none, nullptr);
  EXPECT_THAT(outcomeOf(ncclCommSplit(parent[0], 0, 0, &none, &garbage)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommSplit", "blocking", "5"}));
}

TEST(BadInput, RevokingNullIsNothing) {
  EXPECT_EQ(ncclCommRevoke(nullptr, NCCL_REVOKE_DEFAULT), ncclSuccess);
}

TEST(BadInput, ASendToItselfWithoutItsReceiveLeavesTheCommunicatorUsable) {
  // NCCL refuses it with ncclInvalidUsage when the group launches, and a
  // blocking communicator stays usable: so here, before anything runs.
  LocalComms comms(1);
  ncclComm_t comm = comms[0];
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  EXPECT_THAT(outcomeOf(ncclSend(in, 4, ncclFloat, 0, comm, nullptr)),
              FailsWith(ncclInvalidUsage, Words{"rank 0", "1 send(s) to itself", "0 receive(s)"}));
  ncclGroupStart();
  ncclSend(in, 4, ncclFloat, 0, comm, nullptr);
  ncclRecv(out, 2, ncclFloat, 0, comm, nullptr);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidUsage, Words{"16 bytes", "8 bytes"}));
  ncclGroupStart();
  ncclSend(in, 4, ncclFloat, 0, comm, nullptr);
  ncclRecv(out, 4, ncclFloat, 0, comm, nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
  EXPECT_THAT(out, ::testing::ElementsAre(1, 2, 3, 4));
  ncclResult_t async = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
}

// A group one thread makes for several ranks: the rank whose part breaks
// the rule is refused before any rank's part starts, so no part is left
// waiting for a part that never ran.
TEST(BadInput, AnUnpairedSendToItselfInAGroupOfSeveralRanksRunsNothing) {
  LocalComms comms(3);
  std::vector<float> data(3 * 4, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  ncclGroupStart();
  for (int rank = 0; rank < 3; ++rank)
    ncclAllReduce(&data[rank * 4], &data[rank * 4], 4, ncclFloat, ncclSum, comms[rank], nullptr);
  ncclSend(&data[8], 1, ncclFloat, 2, comms[2], nullptr);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()),
              FailsWith(ncclInvalidUsage, Words{"rank 2", "1 send(s) to itself", "0 receive(s)"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THAT(data, ::testing::Each(1.0f));  // nothing ran
  ncclGroupStart();
  for (int rank = 0; rank < 3; ++rank)
    ncclAllReduce(&data[rank * 4], &data[rank * 4], 4, ncclFloat, ncclSum, comms[rank], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(data, ::testing::Each(3.0f));
}

TEST(BadInput, AShrinkExcludesSomeone) {
  LocalComms comms(1);
  ncclComm_t shrunk = nullptr;
  EXPECT_THAT(outcomeOf(ncclCommShrink(comms[0], nullptr, 0, &shrunk, nullptr, NCCL_SHRINK_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommShrink", "excludeRanksCount", "at least 1"}));
  EXPECT_EQ(shrunk, nullptr);
}

TEST(BadInput, GroupEndWithoutGroupStartIsRefused) {
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidUsage, Words{"ncclGroupEnd", "ncclGroupStart"}));
  // Nesting is fine; the extra end is not.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

TEST(BadInput, ArgumentErrorInsideAGroupFailsGroupEndAndRunsNothing) {
  LocalComms comms(2);
  std::vector<float> in0(kCount, 1.0f), in1(kCount, 2.0f);
  std::vector<float> out0(kCount, -1.0f), out1(kCount, -1.0f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  // Valid on rank 0: queued. Had it run alone, it would wait for rank 1.
  EXPECT_EQ(ncclAllReduce(in0.data(), out0.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclAllReduce(in1.data(), out1.data(), kCount, static_cast<ncclDataType_t>(42),
                                      ncclSum, comms[1], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"datatype 42"}));
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidArgument, Words{"datatype 42"}));
  EXPECT_THAT(out0, ::testing::Each(-1.0f)) << "an operation of the failed group ran";
  EXPECT_THAT(out1, ::testing::Each(-1.0f));

  // Nothing was left half-done: the next group runs on both ranks.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(in0.data(), out0.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(in1.data(), out1.data(), kCount, ncclFloat, ncclSum, comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(out0, ::testing::Each(3.0f));
  EXPECT_THAT(out1, ::testing::Each(3.0f));
}

TEST(BadInput, MismatchedSendAndReceiveSizesNameThePeer) {
  LocalComms comms(2);
  std::vector<float> sent(10, 1.0f), received(20, 0.0f);
  Outcome receiver{};
  comms.onEachRank([&](int rank) {
    if (rank == 0) {
      ncclSend(sent.data(), sent.size(), ncclFloat, 1, comms[0], nullptr);  // may succeed: it was sent
    } else {
      receiver = outcomeOf(ncclRecv(received.data(), received.size(), ncclFloat, 0, comms[1], nullptr));
    }
  });
  // Rank 1 expected 80 bytes from rank 0, which sent 40.
  EXPECT_THAT(receiver, FailsWith(ncclInvalidUsage, Words{"ncclRecv", "rank 0", "80", "40"}));
}

TEST(BadInput, ArgumentErrorsLeaveTheCommunicatorUsable) {
  LocalComms comms(2);
  std::vector<float> in(kCount, 1.5f);
  std::vector<std::vector<float>> out(2, std::vector<float>(kCount));
  comms.onEachRank([&](int rank) {
    ncclAllReduce(in.data(), out[rank].data(), kCount, static_cast<ncclDataType_t>(42), ncclSum, comms[rank], nullptr);
    ncclBroadcast(in.data(), out[rank].data(), kCount, ncclFloat, 7, comms[rank], nullptr);
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(comms[rank], &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess) << "an argument error must not break the communicator";
    EXPECT_EQ(ncclAllReduce(in.data(), out[rank].data(), kCount, ncclFloat, ncclSum, comms[rank], nullptr),
              ncclSuccess)
        << ncclGetLastError(nullptr);
  });
  EXPECT_THAT(out[0], ::testing::Each(3.0f));
  EXPECT_THAT(out[1], ::testing::Each(3.0f));
}

// A group that includes a communicator that can no longer run (here one
// revoked) fails before any communicator's part starts: nothing is left
// running or waiting for this thread, and the others stay usable.
TEST(BadInput, AGroupWithAnUnusableCommunicatorRunsNothing) {
  setenv("HORA_TIMEOUT", "10", 1);  // a part left waiting would fail the next group by then
  LocalComms pair(2), revoked(1);
  unsetenv("HORA_TIMEOUT");
  ASSERT_EQ(ncclCommRevoke(revoked[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  std::vector<float> in(kCount, 1.0f);
  std::vector<std::vector<float>> out(2, std::vector<float>(kCount, 0.0f));
  auto groupOn = [&](bool withRevoked) {
    ncclGroupStart();
    for (int r = 0; r < 2; ++r) ncclAllReduce(in.data(), out[r].data(), kCount, ncclFloat, ncclSum, pair[r], nullptr);
    if (withRevoked) ncclAllReduce(in.data(), out[0].data(), kCount, ncclFloat, ncclSum, revoked[0], nullptr);
    return ncclGroupEnd();
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(outcomeOf(groupOn(true)), FailsWith(ncclInvalidUsage, Words{"revoked"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_THAT(out[1], ::testing::Each(0.0f)) << "a part of the failed group ran";
  ASSERT_EQ(groupOn(false), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(out[0], ::testing::Each(2.0f));
  EXPECT_THAT(out[1], ::testing::Each(2.0f));
}

// ncclCommRevoke as NCCL 2.28 does it: afterwards the state is ncclSuccess
// (quiet, fit to shrink or destroy), collectives are refused, revoking again
// and finalizing are bad arguments; inside a group it is allowed.
TEST(BadInput, ARevokedCommunicatorIsQuietAndRefusesWhatNcclRefuses) {
  LocalComms comms(1), other(1);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommRevoke(other[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
  std::vector<float> data(kCount, 1.0f);
  EXPECT_THAT(outcomeOf(ncclAllReduce(data.data(), data.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr)),
              FailsWith(ncclInvalidUsage, Words{"revoked"}));
  EXPECT_THAT(outcomeOf(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"revoked already"}));
  EXPECT_THAT(outcomeOf(ncclCommFinalize(comms[0])), FailsWith(ncclInvalidArgument, Words{"revoked"}));
}

// A failed call writes a WARN line where NCCL_DEBUG=WARN asks for them, as
// NCCL's calls do: a program that prints only ncclGetErrorString's text
// ("run with NCCL_DEBUG=WARN for details") then sees why. The log level is
// read once per process, so the test runs itself again with it set.
TEST(BadInput, AFailedCallIsWarnedOfAtWarn) {
  if (std::getenv("HORA_TEST_WARN_CHILD") != nullptr) {
    LocalComms comms(1);
    float value = 1.0f;
    EXPECT_EQ(ncclAllReduce(&value, &value, 1, static_cast<ncclDataType_t>(99), ncclSum, comms[0], nullptr),
              ncclInvalidArgument);
    return;
  }
  hora::test_support::ProgramRun run;
  run.arguments = {"/proc/self/exe", "--gtest_filter=BadInput.AFailedCallIsWarnedOfAtWarn"};
  run.set = {{"HORA_TEST_WARN_CHILD", "1"}, {"NCCL_DEBUG", "WARN"}};
  run.unset = {"HORA_DEBUG", "HORA_DEBUG_FILE", "NCCL_DEBUG_FILE"};
  const hora::test_support::ProgramResult result = hora::test_support::runProgram(run);
  EXPECT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("hora WARN ncclAllReduce: invalid datatype 99"));
  EXPECT_THAT(ncclGetErrorString(ncclInvalidArgument), HasSubstr("NCCL_DEBUG=WARN"));
}

// As NCCL: an init, split or shrink refused inside a group fails the
// group's ncclGroupEnd too, as a collective's bad argument does.
TEST(BadInput, ARefusedInitOrSplitInAGroupFailsTheGroupEnd) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 5), ncclInvalidArgument);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidArgument, Words{"rank 5"}));
  LocalComms comms(1);
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommSplit(comms[0], 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 0, &child, nullptr, 7), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
}

// PyTorch makes and destroys a PreMulSum handle per collective: handles
// are reused (NCCL's too), so they never run out.
TEST(BadInput, PreMulSumHandlesAreReused) {
  LocalComms comms(1);
  float factor = 0.5f;
  ncclRedOp_t first{}, second{}, again{};
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&first, &factor, ncclFloat, ncclScalarHostImmediate, comms[0]), ncclSuccess);
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&second, &factor, ncclFloat, ncclScalarHostImmediate, comms[0]), ncclSuccess);
  EXPECT_NE(first, second);
  ASSERT_EQ(ncclRedOpDestroy(first, comms[0]), ncclSuccess);
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&again, &factor, ncclFloat, ncclScalarHostImmediate, comms[0]), ncclSuccess);
  EXPECT_EQ(again, first);
  for (int i = 0; i < 1000; ++i) {
    ncclRedOp_t op{};
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &factor, ncclFloat, ncclScalarHostImmediate, comms[0]), ncclSuccess);
    EXPECT_EQ(static_cast<int>(op), static_cast<int>(first) + 2);  // the lowest free one (first and second live)
    ASSERT_EQ(ncclRedOpDestroy(op, comms[0]), ncclSuccess);
  }
}

// A handle is its communicator's: another communicator refuses it, even
// while one of its own sits at the same place in its list (NCCL mangles
// handles with the communicator for this), instead of applying its own
// scalar.
TEST(BadInput, PreMulSumHandleOfAnotherCommunicatorIsRefused) {
  LocalComms a(1), b(1);
  float two = 2.0f, three = 3.0f;
  ncclRedOp_t ofA{}, ofB{};
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&ofA, &two, ncclFloat, ncclScalarHostImmediate, a[0]), ncclSuccess);
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&ofB, &three, ncclFloat, ncclScalarHostImmediate, b[0]), ncclSuccess);
  EXPECT_NE(ofA, ofB);
  EXPECT_GE(static_cast<int>(ofA), static_cast<int>(ncclNumOps));
  float in = 1.0f, out = 0.0f;
  EXPECT_THAT(outcomeOf(ncclAllReduce(&in, &out, 1, ncclFloat, ofA, b[0], nullptr)),
              FailsWith(ncclInvalidArgument, Words{"reduction op " + std::to_string(static_cast<int>(ofA))}));
  EXPECT_EQ(out, 0.0f);
  EXPECT_THAT(outcomeOf(ncclRedOpDestroy(ofA, b[0])), FailsWith(ncclInvalidArgument, Words{"ncclRedOpDestroy"}));
  ASSERT_EQ(ncclAllReduce(&in, &out, 1, ncclFloat, ofB, b[0], nullptr), ncclSuccess);
  EXPECT_EQ(out, 3.0f);
  EXPECT_EQ(ncclRedOpDestroy(ofA, a[0]), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(ofB, b[0]), ncclSuccess);
}

// ncclGroupSimulateEnd ends the group as NVIDIA's does, without running
// what it collected; then it says nothing was estimated.
TEST(BadInput, GroupSimulateEndClosesTheGroupWithoutRunningIt) {
  LocalComms comms(1);
  std::vector<float> in(kCount, 3.0f), out(kCount, 0.0f);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);  // the inner level
  EXPECT_THAT(outcomeOf(ncclGroupSimulateEnd(&info)),
              FailsWith(ncclInvalidUsage, Words{"ncclGroupSimulateEnd", "not supported"}));
  EXPECT_THAT(out, ::testing::Each(0.0f)) << "the simulated group ran";
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidUsage, Words{"without a matching ncclGroupStart"}));
  // No group is left open: a call runs at once.
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  EXPECT_EQ(out, in);
}

TEST(BadInput, UnsupportedEntryPointsSaySo) {
  LocalComms comms(1);
  ncclComm_t comm = comms[0];
  (void)comm;
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  const std::vector<NamedCall> calls = {
      {"ncclGroupSimulateEnd",
       [&] {
         ncclGroupStart();  // outside a group it is refused as ncclGroupEnd is
         return ncclGroupSimulateEnd(&info);
       }},
  };
  for (const auto& named : calls)
    EXPECT_THAT(outcomeOf(named.call()), FailsWith(ncclInvalidUsage, Words{named.name, "not supported"}));
}

TEST(BadInput, FinalizeIsOnceAndNullIsNothing) {
  // NCCL's ncclCommFinalize: NULL succeeds, a second call is refused.
  EXPECT_EQ(ncclCommFinalize(nullptr), ncclSuccess);
  LocalComms comms(1);
  EXPECT_EQ(ncclCommFinalize(comms[0]), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommFinalize(comms[0])),
              FailsWith(ncclInvalidArgument, Words{"ncclCommFinalize", "rank 0", "finalized already"}));
}

// After ncclCommFinalize only ncclCommDestroy may follow: the peers
// finalized too, so new work would wait for them until the deadline.
// It is refused at once; queries still answer.
TEST(BadInput, WorkAfterFinalizeIsRefusedAtOnce) {
  LocalComms comms(2);
  comms.onEachRank([&](int rank) { EXPECT_EQ(ncclCommFinalize(comms[rank]), ncclSuccess); });
  std::vector<float> in(kCount, 1.0f), out(kCount);
  const auto start = std::chrono::steady_clock::now();
  const Words finalized{"rank 0", "finalized", "ncclCommDestroy"};
  EXPECT_THAT(outcomeOf(ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, comms[0], nullptr)),
              FailsWith(ncclInvalidUsage, finalized));
  EXPECT_THAT(outcomeOf(ncclSend(in.data(), kCount, ncclFloat, 1, comms[0], nullptr)),
              FailsWith(ncclInvalidUsage, finalized));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclBroadcast(in.data(), out.data(), kCount, ncclFloat, 0, comms[0], nullptr);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidUsage, finalized));
  ncclComm_t child = nullptr;
  EXPECT_THAT(outcomeOf(ncclCommSplit(comms[0], 0, 0, &child, nullptr)), FailsWith(ncclInvalidUsage, finalized));
  EXPECT_EQ(child, nullptr);
  // As NCCL's: nothing is left to revoke (ncclInvalidArgument), but a
  // finalized communicator can still be shrunk (its ranks meet through
  // their bootstrap listeners, which finalize leaves open).
  EXPECT_THAT(outcomeOf(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"rank 0", "finalized"}));
  int excluded[] = {1};
  ASSERT_EQ(ncclCommShrink(comms[0], excluded, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
      << ncclGetLastError(nullptr);
  float alone = 3;
  EXPECT_EQ(ncclAllReduce(&alone, &alone, 1, ncclFloat, ncclSum, child, nullptr), ncclSuccess);
  EXPECT_EQ(alone, 3);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  int count = 0;
  EXPECT_EQ(ncclCommCount(comms[0], &count), ncclSuccess);
  EXPECT_EQ(count, 2);
}

// A ncclUniqueId's root closes once its communicator is made: an id used
// again is refused by the deadline with a text that says why.
TEST(BadInput, AUniqueIdUsedTwiceSaysItServesOneInitialisation) {
  hora::test_support::ScopedEnv shortTimeout("HORA_TIMEOUT", "1");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t first[2] = {nullptr, nullptr}, second[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < 2; ++rank) ncclCommInitRank(&first[rank], 2, id, rank);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < 2; ++rank) ncclCommInitRank(&second[rank], 2, id, rank);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()),
              FailsWith(ncclRemoteError, Words{"bootstrap root", "ncclGetUniqueId", "one initialisation only"}));
  for (ncclComm_t comm : {first[0], first[1], second[0], second[1]})
    if (comm != nullptr) ncclCommDestroy(comm);
}

TEST(BadInput, MemoryArgumentsAreChecked) {
  int notAllocated = 0;
  void* pointer = nullptr;
  EXPECT_THAT(outcomeOf(ncclMemAlloc(nullptr, 64)),
              FailsWith(ncclInvalidArgument, Words{"ncclMemAlloc", "ptr", "NULL"}));
  pointer = &notAllocated;
  EXPECT_EQ(ncclMemAlloc(&pointer, 0), ncclSuccess);  // as NVIDIA's: no memory, no error
  EXPECT_EQ(pointer, nullptr);
  EXPECT_EQ(ncclMemFree(pointer), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclMemFree(&notAllocated)),
              FailsWith(ncclInvalidArgument, Words{"ncclMemFree", "not returned by ncclMemAlloc"}));
  // More than any host here has: refused at once, not left to fail at the
  // first store into a page that cannot be given.
  EXPECT_THAT(outcomeOf(ncclMemAlloc(&pointer, std::size_t{1} << 45)),
              FailsWith(ncclSystemError, Words{"ncclMemAlloc", "35184372088832 bytes", "available"}));
  ASSERT_EQ(ncclMemAlloc(&pointer, 100), ncclSuccess);
  std::memset(pointer, 1, 100);  // usable memory
  EXPECT_EQ(ncclMemFree(pointer), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclMemFree(pointer)),
              FailsWith(ncclInvalidArgument, Words{"ncclMemFree", "freed already"}));
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);  // as free(NULL)
}

TEST(BadInput, RegistrationArgumentsAreChecked) {
  LocalComms comms(1);
  LocalComms others(1);
  ncclComm_t comm = comms[0];
  float buffer[16] = {};
  void* handle = nullptr;
  EXPECT_THAT(outcomeOf(ncclCommRegister(comm, nullptr, 64, &handle)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommRegister", "buff", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommRegister(comm, buffer, 0, &handle)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommRegister", "size"}));
  EXPECT_THAT(outcomeOf(ncclCommRegister(comm, buffer, sizeof(buffer), nullptr)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommRegister", "handle", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommDeregister(comm, buffer)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommDeregister", "not live"}));
  // NULL handles are taken back as no-ops, as NCCL does (its register gives
  // NULL for a buffer it skips); the communicator must still be checked.
  EXPECT_EQ(ncclCommDeregister(comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(nullptr, nullptr), ncclSuccess);  // NCCL looks at the window first
  EXPECT_THAT(outcomeOf(ncclCommDeregister(nullptr, nullptr)), FailsWith(ncclInvalidArgument, Words{"comm"}));
  ASSERT_EQ(ncclCommRegister(comm, buffer, sizeof(buffer), &handle), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommDeregister(others[0], handle)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommDeregister", "another communicator"}));
  EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommDeregister(comm, handle)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommDeregister", "not live"}));

  ncclWindow_t window = nullptr;
  EXPECT_THAT(outcomeOf(ncclCommWindowRegister(comm, nullptr, 64, &window, NCCL_WIN_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommWindowRegister", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommWindowRegister(comm, buffer, 0, &window, NCCL_WIN_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommWindowRegister", "size is 0"}));
  EXPECT_THAT(outcomeOf(ncclCommWindowRegister(comm, buffer, sizeof(buffer), nullptr, 0)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommWindowRegister", "win", "NULL"}));
  EXPECT_THAT(outcomeOf(ncclCommWindowRegister(comm, buffer, sizeof(buffer), &window, 0x10)),
              FailsWith(ncclInvalidArgument, Words{"ncclCommWindowRegister", "winFlags"}));
  // Heap memory registers (collectives on it take the usual path).
  ASSERT_EQ(ncclCommWindowRegister(comm, buffer, sizeof(buffer), &window, NCCL_WIN_DEFAULT),
            ncclSuccess)
      << ncclGetLastError(comm);
  EXPECT_THAT(outcomeOf(ncclCommWindowDeregister(others[0], window)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommWindowDeregister", "another communicator"}));
  // A handle of the other kind is no handle of this one: refused, and the
  // live handle it resembles is not touched.
  ASSERT_EQ(ncclCommRegister(comm, buffer, sizeof(buffer), &handle), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommDeregister(comm, window)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommDeregister", "not live"}));
  EXPECT_THAT(outcomeOf(ncclCommWindowDeregister(comm, static_cast<ncclWindow_t>(handle))),
              FailsWith(ncclInvalidUsage, Words{"ncclCommWindowDeregister", "not live"}));
  EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comm, window), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommWindowDeregister(comm, window)),
              FailsWith(ncclInvalidUsage, Words{"ncclCommWindowDeregister", "not live"}));
  // None of this broke the communicator.
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 16, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
}

TEST(BadInput, EveryResultCodeHasAnErrorString) {
  for (int code = ncclSuccess; code <= ncclNumResults + 5; ++code) {
    const char* text = ncclGetErrorString(static_cast<ncclResult_t>(code));
    ASSERT_NE(text, nullptr) << code;
    EXPECT_GT(std::strlen(text), 0u) << code;
  }
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidArgument), ncclGetErrorString(ncclInvalidUsage));
  EXPECT_THAT(ncclGetErrorString(ncclRemoteError), HasSubstr("remote"));
}

}  // namespace
}  // namespace hora_api_test
