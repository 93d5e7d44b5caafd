// Non-blocking init (ncclConfig_t.blocking = 0), ranks as threads: the call
// returns at once, ncclCommGetAsyncError says ncclInProgress until the
// communicator is ready (or its init's error), and a call made before then
// waits for it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "nccl_outcome.h"
#include "nonblocking_support.h"

namespace hora_api_test {
namespace {

// A non-blocking init of rank 0 of 2 whose rank 1 never comes; null if
// the call did not return ncclInProgress.
ncclComm_t startRankZeroOfTwoAlone() {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return nullptr;
  ncclConfig_t config = nonBlockingConfig();
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, 2, id, 0, &config);
  EXPECT_EQ(started, ncclInProgress);
  return started == ncclInProgress ? comm : nullptr;
}

TEST(NonBlockingInit, ReturnsAtOnceAndBecomesReady) {
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  std::vector<ncclResult_t> initResults(kRanks), states(kRanks);
  std::vector<long long> sums(kRanks, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank)
    threads.emplace_back([&, rank] {
      ncclConfig_t config = nonBlockingConfig();
      initResults[rank] = ncclCommInitRankConfig(&comms[rank], kRanks, id, rank, &config);
      long long value = rank + 1;
      if (rank == 0) {
        // No polling: a call on a communicator still being made waits for it.
        states[rank] = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr);
      } else {
        states[rank] = settle(comms[rank], std::chrono::seconds(30));
        if (states[rank] == ncclSuccess)
          states[rank] = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr);
      }
      sums[rank] = value;
    });
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_THAT(initResults[rank], ::testing::AnyOf(ncclInProgress, ncclSuccess)) << "rank " << rank;
    EXPECT_EQ(states[rank], ncclSuccess) << "rank " << rank << ": " << ncclGetLastError(nullptr);
    EXPECT_EQ(sums[rank], 6) << "rank " << rank;
    ncclResult_t state = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(comms[rank], &state), ncclSuccess);
    EXPECT_EQ(state, ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
  }
}

// NCCL_COMM_BLOCKING=0 makes every communicator non-blocking, as NCCL's
// does, those made without a config too: one thread then makes every rank
// with plain ncclCommInitRank, each returning at once.
TEST(NonBlockingInit, NcclCommBlockingZeroMakesEveryInitNonBlocking) {
  ASSERT_EQ(::setenv("NCCL_COMM_BLOCKING", "0", 1), 0);
  constexpr int kRanks = 2;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  const auto start = Clock::now();
  for (int rank = 0; rank < kRanks; ++rank)
    EXPECT_THAT(ncclCommInitRank(&comms[rank], kRanks, id, rank), ::testing::AnyOf(ncclInProgress, ncclSuccess))
        << ncclGetLastError(nullptr);
  ::unsetenv("NCCL_COMM_BLOCKING");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  for (ncclComm_t comm : comms) EXPECT_EQ(settle(comm, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  destroyAll(comms);
}

TEST(NonBlockingInit, AFailedInitIsTheCommunicatorsAsyncError) {
  ScopedTimeout timeout("1");
  ncclComm_t comm = startRankZeroOfTwoAlone();
  ASSERT_NE(comm, nullptr);
  const ncclResult_t state = settle(comm, std::chrono::seconds(20));
  timeout.restore();
  EXPECT_EQ(state, ncclRemoteError);
  EXPECT_THAT(std::string(ncclGetLastError(nullptr)), ::testing::HasSubstr("ncclCommGetAsyncError"));
  long long value = 1;
  EXPECT_EQ(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comm, nullptr), ncclRemoteError);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// ncclCommAbort on a communicator whose init waits for a rank that never
// comes stops the init (the documented way to give up on one) instead of
// waiting for its deadline.
TEST(NonBlockingInit, AbortStopsAnInitThatWaitsForAPeer) {
  ScopedTimeout timeout("60");
  ncclComm_t comm = startRankZeroOfTwoAlone();
  timeout.restore();
  ASSERT_NE(comm, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the init is waiting by now
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// An int64 sum of values[rank] over `ranks` of `comms`, one thread issuing
// every rank's call in one group.
void sumInAGroup(const std::vector<ncclComm_t>& comms, std::vector<long long>& values,
                 std::initializer_list<int> ranks) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank : ranks)
    ASSERT_EQ(ncclAllReduce(&values[rank], &values[rank], 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
}

// NCCL's pattern for one thread that drives several ranks: blocking inits
// inside a group return at once and the outermost ncclGroupEnd finishes
// them; so do splits (NCCL_SPLIT_NOCOLOR gives no communicator).
TEST(InitInAGroup, OneThreadMakesAndSplitsEveryRank) {
  constexpr int kRanks = 3;
  ScopedTimeout timeout("10");  // an init that waited inside the call would fail by then
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommInitRank(&comms[rank], kRanks, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  timeout.restore();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  for (int rank = 0; rank < kRanks; ++rank) {
    ncclResult_t state = ncclInternalError;
    ASSERT_EQ(ncclCommGetAsyncError(comms[rank], &state), ncclSuccess);
    EXPECT_EQ(state, ncclSuccess) << "rank " << rank << " is not ready after ncclGroupEnd";
  }
  std::vector<long long> values = {1, 2, 3};
  sumInAGroup(comms, values, {0, 1, 2});
  EXPECT_THAT(values, ::testing::Each(6));

  // Ranks 0 and 2 in one communicator, rank 1 in none.
  std::vector<ncclComm_t> halves(kRanks, nullptr);
  const int colors[kRanks] = {7, NCCL_SPLIT_NOCOLOR, 7};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], colors[rank], rank, &halves[rank], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(halves[1], nullptr);
  ASSERT_NE(halves[0], nullptr);
  ASSERT_NE(halves[2], nullptr);
  int count = 0, newRank = -1;
  ASSERT_EQ(ncclCommCount(halves[2], &count), ncclSuccess);
  ASSERT_EQ(ncclCommUserRank(halves[2], &newRank), ncclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(newRank, 1);
  values = {10, 0, 20};
  sumInAGroup(halves, values, {0, 2});
  EXPECT_EQ(values[0], 30);
  EXPECT_EQ(values[2], 30);
  for (int rank : {0, 2}) EXPECT_EQ(ncclCommDestroy(halves[rank]), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
}

// Every rank of `kRanks` made by one thread inside a group.
std::vector<ncclComm_t> makeInAGroup(int kRanks) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(ncclCommInitRank(&comms[rank], kRanks, id, rank), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  return comms;
}

// Window registration is collective: one thread that registers every rank's
// buffer inside a group (as nccl-tests -R 2 does) used to wait in the first
// rank's call for peers it had not reached, until the deadline. The group's
// end registers them all, and fills the handles then.
TEST(InitInAGroup, OneThreadRegistersEveryRanksWindow) {
  constexpr int kRanks = 2;
  constexpr std::size_t kCount = 100000;
  std::vector<ncclComm_t> comms = makeInAGroup(kRanks);
  ScopedTimeout timeout("10");
  std::vector<void*> buffers(kRanks, nullptr);
  std::vector<ncclWindow_t> windows(kRanks, nullptr);
  for (int rank = 0; rank < kRanks; ++rank) ASSERT_EQ(ncclMemAlloc(&buffers[rank], kCount * sizeof(int)), ncclSuccess);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommWindowRegister(comms[rank], buffers[rank], kCount * sizeof(int), &windows[rank],
                                     NCCL_WIN_COLL_SYMMETRIC),
              ncclSuccess);
  // The collectives of the same group run on the windows just made.
  for (int rank = 0; rank < kRanks; ++rank) {
    int* data = static_cast<int*>(buffers[rank]);
    for (std::size_t i = 0; i < kCount; ++i) data[i] = static_cast<int>(i % 1000) * (rank + 1);
    ASSERT_EQ(ncclAllReduce(data, data, kCount, ncclInt32, ncclSum, comms[rank], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_NE(windows[rank], nullptr) << "rank " << rank << "'s window was not filled in by ncclGroupEnd";
    const int* data = static_cast<const int*>(buffers[rank]);
    for (std::size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(data[i], static_cast<int>(i % 1000) * 3) << "rank " << rank << " element " << i;
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(ncclCommWindowDeregister(comms[rank], windows[rank]), ncclSuccess);
    EXPECT_EQ(ncclMemFree(buffers[rank]), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
  }
}

// ncclCommShrink inside a group, as ncclCommSplit: one thread shrinks every
// surviving rank's communicator.
TEST(InitInAGroup, OneThreadShrinksEveryRank) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeInAGroup(kRanks);
  ScopedTimeout timeout("10");
  int excluded[] = {1};
  std::vector<ncclComm_t> shrunk(kRanks, nullptr);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank : {0, 2})
    ASSERT_EQ(ncclCommShrink(comms[rank], excluded, 1, &shrunk[rank], nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
        << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  std::vector<long long> values = {5, 0, 7};
  sumInAGroup(shrunk, values, {0, 2});
  EXPECT_EQ(values[0], 12);
  EXPECT_EQ(values[2], 12);
  for (int rank : {0, 2}) EXPECT_EQ(ncclCommDestroy(shrunk[rank]), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
}

// A communicator made in a group shares its flag with the init that made
// it (ncclCommAbort stops an init still running through it). Aborting it
// later must still tell the other ranks why its connections close: the
// peer's next call fails at once with the abort as its cause, not with a
// closed connection half a second later.
TEST(InitInAGroup, AbortOfACommunicatorMadeInAGroupTellsThePeers) {
  std::vector<ncclComm_t> comms = makeInAGroup(2);
  ASSERT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  float value = 1;
  const auto start = Clock::now();
  EXPECT_THAT(outcomeOf(ncclAllReduce(&value, &value, 1, ncclFloat, ncclSum, comms[1], nullptr)),
              FailsWith(ncclRemoteError, Words{"stopped by rank 0", "aborted the communicator"}));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(400));
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

// ncclCommAbort from another thread ends a shrink that waits for a rank
// that never asks (as it ends a split or a collective), with the abort as
// its error, not the deadline's.
TEST(InitInAGroup, AbortEndsAShrinkWaitingForAnAbsentRank) {
  for (int flags : {NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT}) {
    std::vector<ncclComm_t> comms = makeInAGroup(3);
    ScopedTimeout timeout("20");
    int excluded[] = {2};
    ncclComm_t shrunk = nullptr;
    ncclResult_t result = ncclSuccess;
    const auto start = Clock::now();
    std::thread shrinking([&] { result = ncclCommShrink(comms[0], excluded, 1, &shrunk, nullptr, flags); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 1 never asks
    EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
    shrinking.join();
    EXPECT_EQ(result, ncclInvalidUsage) << "flags " << flags << ": " << ncclGetLastError(nullptr);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3)) << "flags " << flags;
    EXPECT_EQ(shrunk, nullptr);
    for (int rank : {1, 2}) EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
  }
}

// A refused call in a group with collective work of other ranks (window
// registrations, shrinks, splits) fails the group at once: that work is
// not begun, so no rank waits for the refused one, and the communicators
// stay usable.
TEST(InitInAGroup, ARefusedCallBesideCollectiveWorkFailsTheGroupAtOnce) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms = makeInAGroup(kRanks);
  ScopedTimeout timeout("30");
  void* buffer = nullptr;
  ASSERT_EQ(ncclMemAlloc(&buffer, 4096), ncclSuccess);
  std::vector<ncclWindow_t> windows(kRanks, nullptr);
  std::vector<ncclComm_t> children(kRanks, nullptr);
  int excluded[] = {1};
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommWindowRegister(comms[0], buffer, 4096, &windows[0], NCCL_WIN_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommWindowRegister(comms[1], nullptr, 4096, &windows[1], NCCL_WIN_DEFAULT), ncclInvalidArgument);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidArgument, Words{"buffer is NULL"}));
  EXPECT_EQ(windows[0], nullptr) << "a registration of a failed group was made";
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommShrink(comms[0], excluded, 1, &children[0], nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommShrink(comms[1], excluded, 1, &children[1], nullptr, 12345), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclComm_t split = nullptr;
  EXPECT_EQ(ncclCommSplit(comms[0], 0, 0, &split, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommSplit(comms[1], 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  // The handles of the shrink and the split that never ran say so.
  for (ncclComm_t never : {children[0], split}) {
    ASSERT_NE(never, nullptr);
    ncclResult_t state = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(never, &state), ncclSuccess);
    EXPECT_EQ(state, ncclInvalidArgument);
    EXPECT_EQ(ncclCommAbort(never), ncclSuccess);
  }
  std::vector<long long> values = {1, 2};
  sumInAGroup(comms, values, {0, 1});  // the communicators still work
  EXPECT_THAT(values, ::testing::Each(3));
  EXPECT_EQ(ncclMemFree(buffer), ncclSuccess);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Making a rank and registering its window in one group, rank by rank: the
// registration is checked and made once the group's inits are done, not
// waited for in the call.
TEST(InitInAGroup, InitAndWindowOfEachRankInTurn) {
  constexpr int kRanks = 2;
  ScopedTimeout timeout("10");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  std::vector<void*> buffers(kRanks, nullptr);
  std::vector<ncclWindow_t> windows(kRanks, nullptr);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(ncclMemAlloc(&buffers[rank], 4096), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comms[rank], kRanks, id, rank), ncclSuccess);
    ASSERT_EQ(ncclCommWindowRegister(comms[rank], buffers[rank], 4096, &windows[rank], NCCL_WIN_DEFAULT), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_NE(windows[rank], nullptr);
    EXPECT_EQ(ncclCommWindowDeregister(comms[rank], windows[rank]), ncclSuccess);
    EXPECT_EQ(ncclMemFree(buffers[rank]), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
  }
}

// As NCCL: a group with a refused init runs nothing. The inits it began
// used to wait at ncclGroupEnd for the rank the refused call would have
// made, until the deadline; now the group fails at once, with the refused
// call's error and text.
TEST(InitInAGroup, ARefusedInitFailsTheGroupAtOnce) {
  constexpr int kRanks = 3;
  ScopedTimeout timeout("60");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommInitRank(&comms[0], kRanks, id, 0), ncclSuccess);
  EXPECT_EQ(ncclCommInitRank(&comms[1], kRanks, id, 7), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comms[2], kRanks, id, 2), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclGroupEnd()), FailsWith(ncclInvalidArgument, Words{"rank 7"}));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(comms[1], nullptr);
  for (ncclComm_t comm : {comms[0], comms[2]}) {
    ASSERT_NE(comm, nullptr);
    ncclResult_t state = ncclSuccess;
    ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    EXPECT_NE(state, ncclSuccess) << "an init of a failed group is usable";
    EXPECT_NE(state, ncclInProgress);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  }
}

}  // namespace
}  // namespace hora_api_test

namespace hora_api_test {
namespace {

// ncclCommInitRankScalable: every rank passes the same ids; hora meets at
// one of them. With one id (torch's default up to 128 ranks), with two and
// three, and with three handed to each rank in a different order (NCCL
// asks for one order; hora's ranks meet all the same, and fast: the test's
// HORA_TIMEOUT, 10 s in this suite, is twice what it may take).
TEST(ScalableInit, RanksMeetAtOneOfTheIdsWhateverTheirOrder) {
  constexpr int kRanks = 3;
  for (int nId : {1, 2, 3, -3}) {  // -3: three ids, rotated by the rank
    const bool rotated = nId < 0;
    nId = std::abs(nId);
    SCOPED_TRACE(std::to_string(nId) + " id(s)" + (rotated ? ", in each rank's own order" : ""));
    std::vector<ncclUniqueId> ids(nId);
    for (auto& id : ids) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<ncclComm_t> comms(kRanks, nullptr);
    std::vector<ncclResult_t> results(kRanks, ncclInternalError);
    std::vector<long long> sums(kRanks, 0);
    std::vector<std::thread> threads;
    const auto start = std::chrono::steady_clock::now();
    for (int rank = 0; rank < kRanks; ++rank)
      threads.emplace_back([&, rank] {
        std::vector<ncclUniqueId> mine = ids;
        if (rotated) std::rotate(mine.begin(), mine.begin() + rank % nId, mine.end());
        results[rank] = ncclCommInitRankScalable(&comms[rank], kRanks, rank, nId, mine.data(), nullptr);
        if (results[rank] != ncclSuccess) return;
        long long value = rank + 1;
        results[rank] = ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr);
        sums[rank] = value;
      });
    for (auto& thread : threads) thread.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    for (int rank = 0; rank < kRanks; ++rank) {
      EXPECT_EQ(results[rank], ncclSuccess) << "rank " << rank;
      EXPECT_EQ(sums[rank], 6) << "rank " << rank;
      if (comms[rank] != nullptr) {
        EXPECT_EQ(ncclCommDestroy(comms[rank]), ncclSuccess);
      }
    }
  }
}

TEST(ScalableInit, BadIdsAreRefused) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  std::memset(&ids[1], 0, sizeof(ids[1]));  // not an id
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 2, ids, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 0, ids, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 1, nullptr, nullptr), ncclInvalidArgument);
  // More ids than ranks, all valid: refused, as NCCL does.
  ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  EXPECT_THAT(outcomeOf(ncclCommInitRankScalable(&comm, 1, 0, 2, ids, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"nId", "at most nranks (1), got 2"}));
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
}  // namespace hora_api_test
