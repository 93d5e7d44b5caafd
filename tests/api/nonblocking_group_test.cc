// Groups of non-blocking communicators (config.blocking = 0), ranks as
// threads. As NCCL's, such a group ends in the background: ncclGroupEnd
// returns ncclInProgress at once, each communicator's ncclCommGetAsyncError
// says ncclInProgress until the group's work is done, a failure is every
// member's error, and ncclCommAbort of one member stops them all. So one
// thread may issue a group for some ranks and then serve the others, which
// a group that ended in the foreground could not (its ncclGroupEnd would
// wait for the other ranks until the deadline): that is what most of these
// tests do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "nccl_outcome.h"
#include "nonblocking_support.h"

namespace hora_api_test {
namespace {

// One group of `ranks`' int64 sums of values[rank], issued by this thread;
// what ncclGroupEnd returned.
ncclResult_t groupSum(const std::vector<ncclComm_t>& comms, std::vector<long long>& values,
                      const std::vector<int>& ranks) {
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank : ranks)
    EXPECT_EQ(ncclAllReduce(&values[rank], &values[rank], 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess);
  return ncclGroupEnd();
}

ncclResult_t stateOf(ncclComm_t comm) {
  ncclResult_t state = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  return state;
}

// groupSum of `ranks` only, which then wait in the background for the
// others, who never come.
void groupLeftWaiting(const std::vector<ncclComm_t>& comms, std::vector<long long>& values,
                      const std::vector<int>& ranks) {
  EXPECT_EQ(groupSum(comms, values, ranks), ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // waiting by now
  for (int rank : ranks) EXPECT_EQ(stateOf(comms[rank]), ncclInProgress) << "rank " << rank;
}

// The state a communicator stopped by abort or revoke settles in: an error.
void expectStoppedWithAnError(ncclComm_t comm) {
  const ncclResult_t state = settle(comm, kSettle);
  EXPECT_NE(state, ncclSuccess);
  EXPECT_NE(state, ncclInProgress);
}

TEST(NonBlockingGroup, EndsAtOnceWhileItsCollectivesWaitForARankOutsideIt) {
  constexpr int kRanks = 3;
  // HORA_TIMEOUT 10 s: a group that ended in the foreground would fail by then.
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "10");
  std::vector<long long> values = {1, 20, 300};
  const auto start = Clock::now();
  EXPECT_EQ(groupSum(comms, values, {0, 1}), ncclInProgress) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  // Ranks 0 and 1 wait for rank 2, which this thread has yet to serve.
  EXPECT_EQ(stateOf(comms[0]), ncclInProgress);
  EXPECT_EQ(stateOf(comms[1]), ncclInProgress);
  EXPECT_EQ(stateOf(comms[2]), ncclSuccess);
  // Outside a group a collective returns when done, in either mode.
  ASSERT_EQ(ncclAllReduce(&values[2], &values[2], 1, ncclInt64, ncclSum, comms[2], nullptr), ncclSuccess)
      << ncclGetLastError(nullptr);
  for (int rank : {0, 1}) EXPECT_EQ(settle(comms[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_THAT(values, ::testing::Each(321));
  // Calls on a member made before it settles wait for the group's work:
  // a second group, used at once.
  values = {1, 2, 4};
  EXPECT_THAT(groupSum(comms, values, {0, 1, 2}), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  long long again = 1;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (ncclComm_t comm : comms)
    ASSERT_EQ(ncclAllReduce(&again, &again, 0, ncclInt64, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_THAT(ncclGroupEnd(), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  for (ncclComm_t comm : comms) EXPECT_EQ(settle(comm, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(values, ::testing::Each(7));
  destroyAll(comms);
}

TEST(NonBlockingGroup, SplitsInAGroupEndInTheBackground) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "10");
  std::vector<ncclComm_t> children(kRanks, nullptr);
  const auto start = Clock::now();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank : {0, 1}) ASSERT_EQ(ncclCommSplit(comms[rank], 0, -rank, &children[rank], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(stateOf(comms[0]), ncclInProgress);
  // Rank 2's split, outside the group (non-blocking: it returns at once).
  ASSERT_EQ(ncclCommSplit(comms[2], 0, -2, &children[2], nullptr), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(settle(comms[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(settle(children[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  int newRank = -1;
  ASSERT_EQ(ncclCommUserRank(children[0], &newRank), ncclSuccess);
  EXPECT_EQ(newRank, 2);  // keys 0, -1, -2: the order reversed
  std::vector<long long> values = {5, 6, 7};
  EXPECT_THAT(groupSum(children, values, {0, 1, 2}), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  for (ncclComm_t child : children) EXPECT_EQ(settle(child, kSettle), ncclSuccess);
  EXPECT_THAT(values, ::testing::Each(18));
  destroyAll(children);
  destroyAll(comms);
}

// As NCCL: the group's failure is the error of every communicator in it,
// reported by ncclCommGetAsyncError with its text; the way out (a shrink)
// still works.
TEST(NonBlockingGroup, ItsFailureIsEveryMembersError) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks);
  const int colors[kRanks] = {0, -5, 0};
  std::vector<ncclComm_t> children(kRanks, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank)
    ASSERT_EQ(ncclCommSplit(comms[rank], colors[rank], 0, &children[rank], nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  for (int rank = 0; rank < kRanks; ++rank) {
    expectTheBadColourIsTheError(comms[rank], rank);
    ASSERT_NE(children[rank], nullptr);
    EXPECT_EQ(settle(children[rank], kSettle), ncclInvalidArgument);
  }
  destroyAll(children);
  std::vector<ncclComm_t> shrunk(kRanks, nullptr);
  int left = 1;
  for (int rank : {0, 2})
    ASSERT_EQ(ncclCommShrink(comms[rank], &left, 1, &shrunk[rank], nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  std::vector<long long> values = {3, 0, 4};
  EXPECT_THAT(groupSum(shrunk, values, {0, 2}), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  for (int rank : {0, 2}) EXPECT_EQ(settle(shrunk[rank], kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(values[0], 7);
  EXPECT_EQ(values[2], 7);
  destroyAll(shrunk);
  destroyAll(comms);
}

// ncclCommAbort of one member of a group still waiting (for a rank that
// never comes) returns at once and stops every member, as NCCL's abort of
// a group job does: none is left waiting until its deadline.
TEST(NonBlockingGroup, AbortOfOneMemberStopsTheWholeGroup) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "60");
  std::vector<long long> values = {1, 2, 3};
  groupLeftWaiting(comms, values, {0, 1});
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  expectStoppedWithAnError(comms[1]);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[2]), ncclSuccess);
}

// ncclCommRevoke of a member of a group still waiting (for a rank that
// never comes) stops that member's part at once, as NCCL's revoke raises
// the abort flag before it waits for anything: it is the way out of
// such a wait, so it must not wait for it.
TEST(NonBlockingGroup, RevokeStopsAMemberStillWaitingInsteadOfWaitingForIt) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "60");
  std::vector<long long> values = {1, 2};
  groupLeftWaiting(comms, values, {0});
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  expectStoppedWithAnError(comms[0]);
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

// ncclCommShrink with NCCL_SHRINK_ABORT stops the group its members still
// wait in (for rank 2, which never comes) instead of waiting for it, and
// the shrunk communicator works.
TEST(NonBlockingGroup, ShrinkWithAbortStopsTheGroupItsMembersWaitIn) {
  constexpr int kRanks = 3;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks, "60");
  std::vector<long long> values = {1, 2, 3};
  groupLeftWaiting(comms, values, {0, 1});
  const auto start = Clock::now();
  int left = 2;
  std::vector<ncclComm_t> shrunk(2, nullptr);
  for (int rank : {0, 1}) {
    ncclConfig_t config = nonBlockingConfig();
    EXPECT_EQ(ncclCommShrink(comms[rank], &left, 1, &shrunk[rank], &config, NCCL_SHRINK_ABORT), ncclSuccess)
        << ncclGetLastError(nullptr);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3)) << "rank " << rank;
  }
  for (ncclComm_t comm : shrunk) ASSERT_EQ(settle(comm, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  values = {5, 7, 0};
  EXPECT_THAT(groupSum(shrunk, values, {0, 1}), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  for (ncclComm_t comm : shrunk) EXPECT_EQ(settle(comm, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(values[0], 12);
  EXPECT_EQ(values[1], 12);
  destroyAll(shrunk);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

// Destroying the members right after the group waits for its work first
// (the other ranks' part needs this rank's), as NCCL's destroy does.
TEST(NonBlockingGroup, DestroyWaitsForTheGroupsWork) {
  constexpr int kRanks = 2;
  std::vector<ncclComm_t> comms = makeNonBlocking(kRanks);
  std::vector<long long> values = {40, 2};
  EXPECT_THAT(groupSum(comms, values, {0, 1}), ::testing::AnyOf(ncclInProgress, ncclSuccess));
  destroyAll(comms);
  EXPECT_THAT(values, ::testing::Each(42));
}

// A group that names a blocking communicator ends in the foreground (NCCL
// refuses to mix the modes in one group; hora runs it, as a blocking one).
TEST(NonBlockingGroup, ABlockingMemberKeepsTheGroupInTheForeground) {
  std::vector<ncclComm_t> comms = makeNonBlocking(2);
  std::vector<ncclComm_t> blocking(2, nullptr);
  ASSERT_EQ(ncclCommInitAll(blocking.data(), 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<long long> values = {1, 2}, others = {3, 4};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(ncclAllReduce(&values[rank], &values[rank], 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(&others[rank], &others[rank], 1, ncclInt64, ncclSum, blocking[rank], nullptr),
              ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_THAT(values, ::testing::Each(3));
  EXPECT_THAT(others, ::testing::Each(7));
  destroyAll(blocking);
  destroyAll(comms);
}

}  // namespace
}  // namespace hora_api_test
