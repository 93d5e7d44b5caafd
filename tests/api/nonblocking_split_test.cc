// ncclCommSplit and ncclCommShrink of non-blocking communicators
// (config.blocking = 0), ranks as threads. As NCCL's, such a call returns
// at once; the parent's ncclCommGetAsyncError says ncclInProgress until the
// ranks have agreed, the new communicator's until it is made. So one thread
// can split every rank's communicator without a group, which a blocking
// split cannot (its first call would wait for the other ranks' calls until
// the deadline): that is what most of these tests do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "nccl.h"
#include "nccl_outcome.h"
#include "nonblocking_support.h"

namespace hora_api_test {
namespace {

// An int64 sum of values[rank] over `ranks` of `comms`, one thread issuing
// every rank's call in one group. A group of non-blocking communicators
// ends in the background, as NCCL's: done once every one has settled.
void sumInAGroup(const std::vector<ncclComm_t>& comms, std::vector<long long>& values, const std::vector<int>& ranks) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank : ranks)
    ASSERT_EQ(ncclAllReduce(&values[rank], &values[rank], 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess);
  ASSERT_THAT(ncclGroupEnd(), ::testing::AnyOf(ncclInProgress, ncclSuccess)) << ncclGetLastError(nullptr);
  for (int rank : ranks) ASSERT_EQ(settle(comms[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
}

// Shrinks every rank of `kept` past rank `left`, from this thread; the new
// communicators (null for the others).
std::vector<ncclComm_t> shrinkPast(const std::vector<ncclComm_t>& comms, int left, const std::vector<int>& kept) {
  std::vector<ncclComm_t> shrunk(comms.size(), nullptr);
  for (int rank : kept)
    EXPECT_EQ(ncclCommShrink(comms[rank], &left, 1, &shrunk[rank], nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
        << ncclGetLastError(nullptr);
  return shrunk;
}

// Each rank of `kept` gives 10 * (rank + 1); every one must get the sum.
void expectSumOver(const std::vector<ncclComm_t>& comms, const std::vector<int>& kept) {
  std::vector<long long> values(comms.size(), 0);
  long long expected = 0;
  for (int rank : kept) {
    values[rank] = 10LL * (rank + 1);
    expected += values[rank];
  }
  sumInAGroup(comms, values, kept);
  for (int rank : kept) EXPECT_EQ(values[rank], expected) << "rank " << rank;
}

TEST(NonBlockingSplit, OneThreadSplitsEveryRankWithoutAGroup) {
  constexpr int kRanks = 3;
  // HORA_TIMEOUT 10 s: a split that waited inside its call would fail by then.
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "10");
  // Ranks 0 and 2 in one communicator (rank 2 first, by key), rank 1 in none.
  const int colors[kRanks] = {4, NCCL_SPLIT_NOCOLOR, 4};
  const int keys[kRanks] = {9, 0, 1};
  std::vector<ncclComm_t> halves(kRanks, nullptr);
  const auto start = Clock::now();
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], colors[rank], keys[rank], &halves[rank], nullptr), ncclSuccess)
        << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(halves[1], nullptr);
  ASSERT_NE(halves[0], nullptr);  // the handle exists at once, pending
  ASSERT_NE(halves[2], nullptr);
  // NCCL's way to wait: the parent's state, which covers the new
  // communicator's init, so that it is ready then.
  for (int rank = 0; rank < kRanks; ++rank) EXPECT_EQ(settle(comms[rank], kSettle), ncclSuccess) << "rank " << rank;
  for (int rank : {0, 2}) {
    ncclResult_t state = ncclInternalError;
    ASSERT_EQ(ncclCommGetAsyncError(halves[rank], &state), ncclSuccess);
    EXPECT_EQ(state, ncclSuccess) << "rank " << rank << "'s new communicator is not ready when its parent is";
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  int count = 0, newRank = -1;
  ASSERT_EQ(ncclCommCount(halves[0], &count), ncclSuccess);
  ASSERT_EQ(ncclCommUserRank(halves[0], &newRank), ncclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(newRank, 1);
  std::vector<long long> values = {10, 0, 20};
  sumInAGroup(halves, values, {0, 2});
  EXPECT_EQ(values[0], 30);
  EXPECT_EQ(values[2], 30);

  // Without a config of its own a new communicator is non-blocking as its
  // parent: split again, from this thread, without polling first (a call on
  // a communicator whose split is still going waits for it).
  std::vector<ncclComm_t> quarters(kRanks, nullptr);
  for (int rank : {0, 2})
    ASSERT_EQ(ncclCommSplit(halves[rank], 0, 0, &quarters[rank], nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  values = {1, 0, 2};
  sumInAGroup(quarters, values, {0, 2});
  EXPECT_EQ(values[0], 3);
  EXPECT_EQ(values[2], 3);
  // The parents still work.
  values = {1, 2, 3};
  sumInAGroup(comms, values, {0, 1, 2});
  EXPECT_THAT(values, ::testing::Each(6));
  destroyAll(quarters);
  destroyAll(halves);
  destroyAll(comms);
}

// A blocking config for the new communicator makes it blocking: a split
// of it then waits inside the call for the other ranks (here, rank 0's
// alone, until its deadline), where a non-blocking one returns at once.
TEST(NonBlockingSplit, AConfigOfItsOwnDecidesTheNewCommunicatorsMode) {
  constexpr int kRanks = 2;
  // HORA_TIMEOUT 2 s, which the new communicators inherit.
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "2");
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  std::vector<ncclComm_t> children(kRanks, nullptr);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], 0, rank, &children[rank], &blocking), ncclSuccess);
  for (ncclComm_t child : children) ASSERT_EQ(settle(child, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  ncclComm_t grandchild = nullptr;
  const auto start = Clock::now();
  EXPECT_NE(ncclCommSplit(children[0], 0, 0, &grandchild, nullptr), ncclSuccess);
  EXPECT_GE(Clock::now() - start, std::chrono::seconds(1)) << "the split did not wait inside the call";
  EXPECT_EQ(grandchild, nullptr);
  for (ncclComm_t child : children) EXPECT_EQ(ncclCommAbort(child), ncclSuccess);
  destroyAll(comms);
}

// As NCCL: a failed non-blocking split is the parent's error from then on
// (ncclCommGetAsyncError reports it, with its text, and the parent's calls
// fail with it), on every rank, the rank that takes no part too; the new
// handles report it as well.
TEST(NonBlockingSplit, ABadColourIsEveryParentsError) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks);
  const int colors[kRanks] = {0, -5, NCCL_SPLIT_NOCOLOR};
  std::vector<ncclComm_t> children(kRanks, nullptr);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], colors[rank], 0, &children[rank], nullptr), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) {
    expectTheBadColourIsTheError(comms[rank], rank);
  }
  for (int rank : {0, 1}) {
    ASSERT_NE(children[rank], nullptr);
    EXPECT_EQ(settle(children[rank], kSettle), ncclInvalidArgument);
    EXPECT_EQ(ncclCommDestroy(children[rank]), ncclSuccess);
  }
  EXPECT_EQ(children[2], nullptr);
  // The way out still works: ranks 0 and 1 shrink past rank 2.
  std::vector<ncclComm_t> shrunk = shrinkPast(comms, 2, {0, 1});
  expectSumOver(shrunk, {0, 1});
  destroyAll(shrunk);
  destroyAll(comms);
}

// Two non-blocking communicators (a long HORA_TIMEOUT) of which only rank
// 0 splits: its split waits for rank 1, the parent says ncclInProgress.
struct LoneSplit {
  std::vector<ncclComm_t> comms;
  ncclComm_t child = nullptr;
};

LoneSplit startLoneSplit() {
  LoneSplit lone{makeNonBlocking(2, "60")};
  EXPECT_EQ(ncclCommSplit(lone.comms[0], 0, 0, &lone.child, nullptr), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // waiting for rank 1 by now
  ncclResult_t state = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(lone.comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  return lone;
}

// ncclCommAbort of the parent ends the split at once (not at the
// deadline); the new handle then reports the failure.
TEST(NonBlockingSplit, AbortEndsASplitThatWaitsForAPeer) {
  LoneSplit lone = startLoneSplit();
  ASSERT_NE(lone.child, nullptr);
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(lone.comms[0]), ncclSuccess);
  const ncclResult_t childState = settle(lone.child, kSettle);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(childState, ncclSuccess);
  EXPECT_NE(childState, ncclInProgress);
  EXPECT_EQ(ncclCommAbort(lone.child), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(lone.comms[1]), ncclSuccess);
}

// ncclCommAbort of the new handle returns at once; the parent's exchange
// goes on (the parent's own business), and the parent's abort ends it.
TEST(NonBlockingSplit, AbortOfTheNewHandleReturnsAtOnce) {
  LoneSplit lone = startLoneSplit();
  ASSERT_NE(lone.child, nullptr);
  auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(lone.child), ncclSuccess);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(lone.comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  start = Clock::now();
  EXPECT_EQ(ncclCommAbort(lone.comms[0]), ncclSuccess);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(ncclCommAbort(lone.comms[1]), ncclSuccess);
}

// Parents destroyed right after their split: each destroy lets its
// exchange end first (the other rank's needs it), so the new communicators
// are made and work.
TEST(NonBlockingSplit, ParentsDestroyedAtOnceLetTheSplitFinish) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks);
  std::vector<ncclComm_t> children(kRanks, nullptr);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], 0, rank, &children[rank], nullptr), ncclSuccess);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  for (ncclComm_t child : children) EXPECT_EQ(settle(child, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<long long> values = {2, 3};
  sumInAGroup(children, values, {0, 1});
  EXPECT_THAT(values, ::testing::Each(5));
  destroyAll(children);
}

TEST(NonBlockingShrink, OneThreadShrinksEveryRemainingRankWithoutAGroup) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "10");
  const auto start = Clock::now();
  std::vector<ncclComm_t> shrunk = shrinkPast(comms, 1, {0, 2});
  for (int rank : {0, 2}) {
    EXPECT_EQ(settle(comms[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(settle(shrunk[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  expectSumOver(shrunk, {0, 2});
  destroyAll(shrunk);
  destroyAll(comms);
}

// A bad list is refused by the call itself, as on a blocking communicator:
// nothing starts and the communicator stays usable.
TEST(NonBlockingShrink, ABadListIsRefusedAtOnceAndLeavesTheCommunicatorUsable) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks);
  ncclComm_t shrunk = nullptr;
  int itself[] = {0};
  EXPECT_THAT(outcomeOf(ncclCommShrink(comms[0], itself, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"rank 0 is in excludeRanksList"}));
  int outside[] = {2};
  EXPECT_THAT(outcomeOf(ncclCommShrink(comms[0], outside, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT)),
              FailsWith(ncclInvalidArgument, Words{"excluded rank 2 is outside [0, 2)"}));
  EXPECT_EQ(shrunk, nullptr);
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
  std::vector<long long> values = {1, 1};
  sumInAGroup(comms, values, {0, 1});
  EXPECT_THAT(values, ::testing::Each(2));
  destroyAll(comms);
}

}  // namespace
}  // namespace hora_api_test
