// The agreement check (src/core/agreement.h) with ranks as threads: ranks
// that disagree on a call (its count, type, reduction, root or kind, a call
// one rank skipped, a receive smaller than its send) must all fail with
// ncclInvalidUsage, each naming the field and both values, within a few
// seconds, and none may return success; each case runs over shared memory
// (also with small messages by LL) and over TCP, some also on windows. tests/api/agreement_process_test.cc
// runs the same disagreements between processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hora_config.h"
#include "local_comms.h"
#include "nccl_outcome.h"

namespace hora_api_test {
namespace {

using ::testing::AnyOf;
using Clock = std::chrono::steady_clock;

// A wait on a peer gives up after 5 s; every failure here must come well
// before that, from the check, not from a timeout.
constexpr auto kPromptly = std::chrono::milliseconds(3000);

using RankCall = std::function<ncclResult_t(int rank, ncclComm_t comm)>;

class Agreement : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string transport = GetParam();
    if (transport == "shm-ll") {
      // Messages of up to 4 KiB by LL: the two ends of a disagreement then
      // often expect its first bytes on different FIFOs.
      ::setenv("HORA_TRANSPORT", "shm", 1);
      ::setenv("HORA_LL_MAX_BYTES", "4096", 1);
    } else {
      ::setenv("HORA_TRANSPORT", transport.c_str(), 1);
    }
    ::setenv("HORA_OFI_PROVIDER", "tcp", 1);  // for ofi: libfabric's tcp provider
    ::setenv("HORA_TIMEOUT", "5", 1);
  }
  void TearDown() override {
    ::unsetenv("HORA_TRANSPORT");
    ::unsetenv("HORA_LL_MAX_BYTES");
    ::unsetenv("HORA_TIMEOUT");
  }

  // Runs call(rank, comm) on every rank at once; each rank's outcome.
  std::vector<Outcome> onEachRank(const LocalComms& comms, const RankCall& call) {
    std::vector<Outcome> outcomes(comms.size());
    const auto start = Clock::now();
    comms.onEachRank([&](int rank) { outcomes[rank] = outcomeOf(call(rank, comms[rank])); });
    EXPECT_LT(Clock::now() - start, kPromptly) << "the ranks took as long as a timeout";
    return outcomes;
  }

  // Every rank failed with ncclInvalidUsage, saying every one of `words`;
  // and the communicator stays failed: a later, matching call fails too.
  void expectEveryRankRefuses(const LocalComms& comms, const std::vector<Outcome>& outcomes,
                              const Words& words) {
    for (int rank = 0; rank < comms.size(); ++rank)
      EXPECT_THAT(outcomes[rank], FailsWith(ncclInvalidUsage, words)) << "rank " << rank;
    expectNextCallRefused(comms, words);
  }

  // Where a rank's own exchanges agree (a broadcast's root whose
  // neighbours agree with it, a send whose receiver found the mismatch),
  // its call may succeed: it learns of the mismatch at its next call, which
  // fails with the cause, as every other rank's does.
  void expectNextCallRefused(const LocalComms& comms, const Words& words) {
    const std::vector<Outcome> again = onEachRank(comms, [&](int, ncclComm_t comm) {
      std::vector<float> data(4, 1.0f);
      return ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr);
    });
    for (int rank = 0; rank < comms.size(); ++rank)
      EXPECT_THAT(again[rank], FailsWith(ncclInvalidUsage, words)) << "rank " << rank << ", next call";
  }
};

// The text says one of `texts`: whichever rank found the mismatch, in its
// own words ("count 2000 here, 1000 at rank 0" on rank 1).
MATCHER_P(SaysOneOf, texts, "") {
  for (const std::string& text : texts)
    if (arg.text.find(text) != std::string::npos) return true;
  *result_listener << "the error text says none of them";
  return false;
}

#if HORA_HAVE_OFI
INSTANTIATE_TEST_SUITE_P(Transports, Agreement, ::testing::Values("shm", "shm-ll", "tcp", "ofi"));
#else
INSTANTIATE_TEST_SUITE_P(Transports, Agreement, ::testing::Values("shm", "shm-ll", "tcp"));
#endif

// An all-reduce in place of `count` floats on each rank.
ncclResult_t allReduce(ncclComm_t comm, std::size_t count, ncclRedOp_t op = ncclSum) {
  std::vector<float> data(count, 1.0f);
  return ncclAllReduce(data.data(), data.data(), count, ncclFloat, op, comm, nullptr);
}

TEST_P(Agreement, CountMismatchOfTwoRanks) {
  // The case: 1000 elements on rank 0, 2000 on rank 1.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) { return allReduce(comm, rank == 0 ? 1000 : 2000); });
  expectEveryRankRefuses(comms, outcomes, {"count", "1000", "2000", "rank 0", "rank 1", "call #1"});
  const Words found = {"rank 1: collective mismatch with rank 0 on call #1: count 2000 here, 1000 at rank 0",
                       "rank 0: collective mismatch with rank 1 on call #1: count 1000 here, 2000 at rank 1"};
  for (int rank = 0; rank < 2; ++rank) EXPECT_THAT(outcomes[rank], SaysOneOf(found)) << "rank " << rank;
}

TEST_P(Agreement, ABrokenCommunicatorAnswersNoQuery) {
  // As NCCL's calls on a communicator with an asynchronous error: its
  // queries and the calls that make or end something on it report that
  // error, as every later collective does; ncclCommGetAsyncError says it.
  LocalComms comms(2);
  onEachRank(comms, [](int rank, ncclComm_t comm) { return allReduce(comm, rank == 0 ? 1000 : 2000); });
  const Words broken = {"earlier error", "count"};
  for (int rank = 0; rank < comms.size(); ++rank) {
    SCOPED_TRACE(::testing::Message() << "rank " << rank);
    ncclComm_t comm = comms[rank];
    ncclResult_t async = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclInvalidUsage);
    int value = -5;
    EXPECT_THAT(outcomeOf(ncclCommCount(comm, &value)), FailsWith(ncclInvalidUsage, broken));
    EXPECT_THAT(outcomeOf(ncclCommUserRank(comm, &value)), FailsWith(ncclInvalidUsage, broken));
    EXPECT_THAT(outcomeOf(ncclCommCuDevice(comm, &value)), FailsWith(ncclInvalidUsage, broken));
    EXPECT_EQ(value, -5);  // nothing written
    float scalar = 2.0f;
    ncclRedOp_t op;
    EXPECT_THAT(outcomeOf(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm)),
                FailsWith(ncclInvalidUsage, broken));
    EXPECT_THAT(outcomeOf(ncclCommFinalize(comm)), FailsWith(ncclInvalidUsage, broken));
  }
}

TEST_P(Agreement, CountMismatchOfOneRankInThreeReachesEveryRank) {
  // Only the neighbours of rank 2 see its stamps; rank 0 and 1 learn of it
  // from the rank that found it, and say so.
  LocalComms comms(3);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    EXPECT_EQ(allReduce(comm, 64), ncclSuccess) << "call #1 agrees";
    return allReduce(comm, rank == 2 ? 300000 : 100000);  // ring-sized
  });
  expectEveryRankRefuses(comms, outcomes, {"count", "100000", "300000", "call #2"});
}

TEST_P(Agreement, ZeroCountAgainstSomeCount) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) { return allReduce(comm, rank == 0 ? 0 : 16); });
  expectEveryRankRefuses(comms, outcomes, {"count"});
  const Words found = {"count 0 here, 16 at rank 1", "count 16 here, 0 at rank 0"};
  for (int rank = 0; rank < 2; ++rank) EXPECT_THAT(outcomes[rank], SaysOneOf(found)) << "rank " << rank;
}

TEST_P(Agreement, DatatypeMismatch) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<std::int32_t> data(256, 1);  // 1 KiB either way
    return ncclAllReduce(data.data(), data.data(), data.size(), rank == 0 ? ncclInt32 : ncclFloat, ncclSum,
                         comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"datatype", "int32", "float"});
}

TEST_P(Agreement, ReductionMismatch) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    return allReduce(comm, 1000, rank == 0 ? ncclSum : ncclMax);
  });
  expectEveryRankRefuses(comms, outcomes, {"op", "sum", "max"});
}

TEST_P(Agreement, RootMismatchWhereBothRanksThinkTheyAreRoot) {
  // Nobody receives data: only the stamps from the ring neighbour tell.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> data(100, 1.0f);
    return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, rank, comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"root 0", "root 1"});
}

TEST_P(Agreement, RootMismatchWhereNeitherRankIsRoot) {
  // Both wait for data: the stamps they send before waiting tell.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> data(100, 1.0f);
    return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, 1 - rank, comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"root 0", "root 1"});
}

TEST_P(Agreement, RootMismatchOfOneRankInThree) {
  // Rank 1 takes itself for the root. Its neighbours in the ring (0 -> 1 ->
  // 2 -> 0) see its stamps and fail in the call; rank 0, the root for the
  // others, sends to rank 1 and gets rank 2's stamp, which agrees: its
  // broadcast is done, and its next call fails with the cause.
  LocalComms comms(3);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> data(1000, 1.0f);
    return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, rank == 1 ? 1 : 0, comm, nullptr);
  });
  for (int rank : {1, 2}) EXPECT_THAT(outcomes[rank], FailsWith(ncclInvalidUsage, Words{"root 0", "root 1"}));
  EXPECT_THAT(outcomes[0].result, AnyOf(ncclSuccess, ncclInvalidUsage)) << outcomes[0];
  expectNextCallRefused(comms, {"root 0", "root 1"});
}

TEST_P(Agreement, RootMismatchWhereEachRankWaitsForAnotherRoot) {
  // Four ranks in a ring (0 -> 1 -> 2 -> 3 -> 0); ranks 0 and 1 scatter from
  // rank 2, ranks 2 and 3 from rank 0. Every rank takes another for the
  // root and waits for it, and neither root sends: only the stamps round
  // the ring tell, and rank 2 must read rank 1's while it waits for rank 0.
  LocalComms comms(4);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    constexpr std::size_t kCount = 1000;
    std::vector<float> in(4 * kCount, 1.0f), out(kCount);
    return ncclScatter(in.data(), out.data(), kCount, ncclFloat, rank < 2 ? 2 : 0, comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"root 0", "root 2"});
}

TEST_P(Agreement, CollectiveKindMismatch) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> in(64, 1.0f), out(128);
    if (rank == 0) return ncclAllReduce(in.data(), out.data(), 64, ncclFloat, ncclSum, comm, nullptr);
    return ncclAllGather(in.data(), out.data(), 64, ncclFloat, comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"AllReduce", "AllGather"});
}

// A split meets over the bootstrap ring, not the connections; it opens
// with a call stamped as the split, so a rank meeting it with a collective
// fails at once, and so does the splitting rank.
TEST_P(Agreement, SplitOnOneRankCollectiveOnTheOthers) {
  LocalComms comms(3);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    if (rank == 0) {
      ncclComm_t half = nullptr;
      return ncclCommSplit(comm, 0, 0, &half, nullptr);
    }
    return allReduce(comm, 64);
  });
  expectEveryRankRefuses(comms, outcomes, {"ncclCommSplit", "AllReduce", "same calls in the same order"});
}

TEST_P(Agreement, WindowRegistrationOnOneRankCollectiveOnTheOther) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    if (rank == 1) return allReduce(comm, 64);
    void* memory = nullptr;
    ncclWindow_t window = nullptr;
    if (ncclMemAlloc(&memory, 4096) != ncclSuccess) return ncclSystemError;
    const ncclResult_t result = ncclCommWindowRegister(comm, memory, 4096, &window, NCCL_WIN_COLL_SYMMETRIC);
    ncclMemFree(memory);
    return result;
  });
  expectEveryRankRefuses(comms, outcomes, {"ncclCommWindowRegister", "AllReduce"});
}

TEST_P(Agreement, SkippedCallIsReportedAtTheNextCall) {
  // Rank 1 skips call #2 (an all-reduce of the same size as call #3, a
  // broadcast): its call #2 is rank 0's call #3.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> data(500, 1.0f);
    EXPECT_EQ(allReduce(comm, 500), ncclSuccess) << "call #1 agrees";
    if (rank == 0) {
      ncclResult_t second = allReduce(comm, 500);
      if (second != ncclSuccess) return second;
    }
    return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, 0, comm, nullptr);
  });
  expectEveryRankRefuses(comms, outcomes, {"call #2", "AllReduce", "Broadcast", "skip"});
}

TEST_P(Agreement, MismatchInsideAGroupOfCollectives) {
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> a(100, 1.0f), b(200, 1.0f);
    ncclGroupStart();
    ncclAllReduce(a.data(), a.data(), 100, ncclFloat, ncclSum, comm, nullptr);
    ncclAllReduce(b.data(), b.data(), rank == 0 ? 200 : 150, ncclFloat, ncclSum, comm, nullptr);
    return ncclGroupEnd();
  });
  expectEveryRankRefuses(comms, outcomes, {"call #2", "count", "200", "150"});
}

TEST_P(Agreement, ExchangeOfAnotherCountOnOneRank) {
  // Both ranks exchange in one group; rank 1 sends and receives 50 floats,
  // rank 0 100: each receive differs from its send.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> out(100, 1.0f), in(100);
    const int peer = 1 - rank, count = rank == 1 ? 50 : 100;
    ncclGroupStart();
    ncclSend(out.data(), count, ncclFloat, peer, comm, nullptr);
    ncclRecv(in.data(), count, ncclFloat, peer, comm, nullptr);
    return ncclGroupEnd();
  });
  expectEveryRankRefuses(comms, outcomes, {"200 bytes", "400 bytes", "point-to-point"});
  const Words found = {"size 200 bytes here, 400 bytes at rank 0", "size 400 bytes here, 200 bytes at rank 1"};
  for (int rank = 0; rank < 2; ++rank) EXPECT_THAT(outcomes[rank], SaysOneOf(found)) << "rank " << rank;
}

TEST_P(Agreement, ReceiveSmallerThanItsSend) {
  // The receiver fails in the call; the sender's message left (a send
  // completes once its bytes are on their way), so its next call fails.
  LocalComms comms(2);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    std::vector<float> data(100, 1.0f);
    if (rank == 0) return ncclSend(data.data(), 100, ncclFloat, 1, comm, nullptr);
    return ncclRecv(data.data(), 50, ncclFloat, 0, comm, nullptr);
  });
  EXPECT_THAT(outcomes[1], FailsWith(ncclInvalidUsage, Words{"size 200 bytes here, 400 bytes at rank 0"}));
  EXPECT_THAT(outcomes[0].result, AnyOf(ncclSuccess, ncclInvalidUsage)) << outcomes[0];
  expectNextCallRefused(comms, {"200 bytes", "400 bytes"});
}

TEST_P(Agreement, ReceiveNeverWritesPastItsBufferOnAMismatch) {
  // The stamp is checked before a byte lands: the guard after the smaller
  // receive buffer stays intact.
  LocalComms comms(2);
  std::vector<float> landing(64 + 16, -1.0f);
  auto outcomes = onEachRank(comms, [&](int rank, ncclComm_t comm) {
    std::vector<float> out(4096, 7.0f);
    if (rank == 0) return ncclSend(out.data(), out.size(), ncclFloat, 1, comm, nullptr);
    return ncclRecv(landing.data(), 64, ncclFloat, 0, comm, nullptr);
  });
  EXPECT_THAT(outcomes[1], FailsWith(ncclInvalidUsage, Words{"256 bytes", "16384 bytes"}));
  for (float value : landing) EXPECT_EQ(value, -1.0f) << "the receive buffer was written";
}

// Every rank's buffer of 1 MiB from ncclMemAlloc, registered as a window;
// deregistered (where still registered) and freed at the end.
struct RankWindows {
  static constexpr std::size_t kBytes = 1 << 20;
  const LocalComms& comms;
  std::vector<void*> buffers = std::vector<void*>(2, nullptr);
  std::vector<ncclWindow_t> windows = std::vector<ncclWindow_t>(2, nullptr);

  explicit RankWindows(const LocalComms& c) : comms(c) {
    comms.onEachRank([&](int rank) {
      ASSERT_EQ(ncclMemAlloc(&buffers[rank], kBytes), ncclSuccess);
      ASSERT_EQ(ncclCommWindowRegister(comms[rank], buffers[rank], kBytes, &windows[rank], NCCL_WIN_COLL_SYMMETRIC),
                ncclSuccess)
          << ncclGetLastError(nullptr);
    });
  }
  ~RankWindows() {
    comms.onEachRank([&](int rank) {
      if (windows[rank] != nullptr) ncclCommWindowDeregister(comms[rank], windows[rank]);
      ncclMemFree(buffers[rank]);
    });
  }
  ncclResult_t deregister(int rank) {
    return ncclCommWindowDeregister(comms[rank], std::exchange(windows[rank], nullptr));
  }
  // An all-reduce in place of `count` floats of rank's window buffer.
  ncclResult_t allReduce(int rank, std::size_t count) const {
    float* data = static_cast<float*>(buffers[rank]);
    return ncclAllReduce(data, data, count, ncclFloat, ncclSum, comms[rank], nullptr);
  }
};

TEST_P(Agreement, WindowCollectivesCheckToo) {
  // All buffers in windows: the collective would read the peers' memory
  // directly (zero copy); the ranks compare their calls before.
  LocalComms comms(2);
  RankWindows windows(comms);
  auto outcomes = onEachRank(comms, [&](int rank, ncclComm_t) {
    return windows.allReduce(rank, rank == 0 ? 200000 : 100000);
  });
  expectEveryRankRefuses(comms, outcomes, {"count", "100000", "200000"});
}

TEST_P(Agreement, WindowsOnOneRankOnlyFallBackOnBoth) {
  // Deregistering is local, as in NCCL: rank 1 drops its window and rank 0
  // keeps it. Both still take the same path (every rank offers its buffers
  // where a window was ever registered); rank 1 offers none, so both run
  // the ring, and agree.
  const std::string transport = GetParam();
  if (transport == "tcp" || transport == "ofi") GTEST_SKIP() << "windows are zero copy over shared memory only";
  LocalComms comms(2);
  RankWindows windows(comms);
  ASSERT_EQ(windows.deregister(1), ncclSuccess);
  const std::size_t count = RankWindows::kBytes / sizeof(float);
  auto outcomes = onEachRank(comms, [&](int rank, ncclComm_t) {
    float* data = static_cast<float*>(windows.buffers[rank]);
    for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1);
    return windows.allReduce(rank, count);
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(outcomes[rank].result, ncclSuccess) << outcomes[rank];
    const float* data = static_cast<const float*>(windows.buffers[rank]);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(data[i], 3.0f) << "rank " << rank << " at " << i;
  }
}

TEST_P(Agreement, CountsEitherSideOfTheZeroCopyMinimumNameTheCountOnly) {
  // Rank 0's call is large enough for the zero-copy path, rank 1's is not:
  // the paths differ only because the counts do, and the error says so
  // without sending the program after its window registrations.
  LocalComms comms(2);
  RankWindows windows(comms);
  auto outcomes = onEachRank(comms, [&](int rank, ncclComm_t) {
    return windows.allReduce(rank, rank == 0 ? 100000 : 1000);
  });
  expectEveryRankRefuses(comms, outcomes, {"count", "100000", "1000"});
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(outcomes[rank].text.find("ncclCommWindowRegister"), std::string::npos) << outcomes[rank].text;
}

TEST_P(Agreement, MatchingCallsStillSucceed) {
  // The check must not refuse what agrees: every kind, a few sizes.
  LocalComms comms(3);
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) -> ncclResult_t {
    std::vector<float> in(3 * 5000, 1.0f), out(3 * 5000);
    for (std::size_t count : {0ul, 1ul, 5000ul}) {
      ncclResult_t r = ncclSuccess;
      if ((r = ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr))) return r;
      if ((r = ncclBroadcast(in.data(), out.data(), count, ncclFloat, 2, comm, nullptr))) return r;
      if ((r = ncclReduce(in.data(), out.data(), count, ncclFloat, ncclMax, 1, comm, nullptr))) return r;
      if ((r = ncclAllGather(in.data(), out.data(), count, ncclFloat, comm, nullptr))) return r;
      if ((r = ncclReduceScatter(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr))) return r;
      ncclGroupStart();
      ncclSend(in.data(), count, ncclFloat, (rank + 1) % 3, comm, nullptr);
      ncclRecv(out.data(), count, ncclFloat, (rank + 2) % 3, comm, nullptr);
      if ((r = ncclGroupEnd())) return r;
    }
    return ncclSuccess;
  });
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(outcomes[rank].result, ncclSuccess) << outcomes[rank];
}

TEST_P(Agreement, TurnedOffCollectivesAreNotCompared) {
  // HORA_CHECK_AGREEMENT=0: ranks that differ only in the reduction move
  // the same bytes, so nothing but the stamps could tell; both calls
  // complete (what they compute is the program's problem).
  ::setenv("HORA_CHECK_AGREEMENT", "0", 1);
  LocalComms comms(2);
  ::unsetenv("HORA_CHECK_AGREEMENT");
  auto outcomes = onEachRank(comms, [](int rank, ncclComm_t comm) {
    return allReduce(comm, 1000, rank == 0 ? ncclSum : ncclMax);
  });
  for (int rank = 0; rank < 2; ++rank) EXPECT_EQ(outcomes[rank].result, ncclSuccess) << outcomes[rank];
}

TEST(AgreementSetting, OnlyZeroOrOne) {
  ::setenv("HORA_CHECK_AGREEMENT", "yes", 1);
  ncclComm_t comm = nullptr;
  const Outcome init = outcomeOf(ncclCommInitAll(&comm, 1, nullptr));
  ::unsetenv("HORA_CHECK_AGREEMENT");
  EXPECT_THAT(init, FailsWith(ncclInvalidArgument, Words{"HORA_CHECK_AGREEMENT"}));
}

}  // namespace
}  // namespace hora_api_test
