// Going on without a rank that died: four rank processes run all-reduces,
// one is killed in the middle, and the three others learn which rank failed
// first from their error, shrink the communicator past it
// (ncclCommShrink, with and without NCCL_SHRINK_ABORT, after ncclCommRevoke
// or not) and complete further all-reduces with exact results, over shared
// memory and TCP, and on non-blocking communicators (the shrink returns at
// once and the survivors poll, as PyTorch does). Also: ranks that disagree on whom to leave out fail on
// every member instead of forming a communicator.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "nonblocking_support.h"
#include "rank_process.h"

namespace hora_api_test {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kRanks = 4;
constexpr int kVictim = 2;
constexpr std::size_t kCount = 1 << 18;

// The rank an error names as the one that failed first, or -1.
int rankFailedFirst(const std::string& text) {
  std::smatch match;
  static const std::regex pattern("rank ([0-9]+)(?: \\([^)]*\\))? failed first");
  return std::regex_search(text, match, pattern) ? std::stoi(match[1]) : -1;
}

struct Variant {
  const char* transport;
  bool revokeFirst;  // ncclCommRevoke, then ncclCommShrink
  int shrinkFlags;
  bool nonBlocking = false;  // config.blocking = 0
};

class Shrink : public ::testing::TestWithParam<Variant> {};

INSTANTIATE_TEST_SUITE_P(
    Transports, Shrink,
    ::testing::Values(Variant{"shm", false, NCCL_SHRINK_DEFAULT}, Variant{"tcp", false, NCCL_SHRINK_DEFAULT},
                      Variant{"shm", true, NCCL_SHRINK_DEFAULT}, Variant{"tcp", false, NCCL_SHRINK_ABORT},
                      Variant{"shm", false, NCCL_SHRINK_ABORT, true}),
    [](const auto& info) {
      return std::string(info.param.transport) + (info.param.revokeFirst ? "_Revoked" : "") +
             (info.param.shrinkFlags == NCCL_SHRINK_ABORT ? "_Abort" : "_Default") +
             (info.param.nonBlocking ? "_NonBlocking" : "");
    });

// A rank: all-reduces until one fails, then shrinks past the rank its error
// names, and all-reduces on the new communicator. Every value is an integer
// small enough that float sums are exact in any order.
int runUntilFailureThenShrink(Reporter& reporter, int rank, const Variant& variant) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = variant.nonBlocking ? 0 : 1;
  ncclComm_t comm = joinCommunicator(reporter, kRanks, rank, &config);
  if (comm == nullptr) return 1;
  std::vector<float> data(kCount);
  ncclResult_t result = ncclSuccess;
  for (int i = 0; result == ncclSuccess; ++i) {
    if (i == 2) reporter.report("running", "");
    std::fill(data.begin(), data.end(), 1.0f);
    result = ncclAllReduce(data.data(), data.data(), kCount, ncclFloat, ncclSum, comm, nullptr);
  }
  const std::string error = ncclGetLastError(comm);
  reporter.report("error", error);
  int failed = rankFailedFirst(error);
  reporter.report("failed_first", std::to_string(failed));
  if (failed < 0) return 1;
  if (variant.revokeFirst && ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess) {
    reporter.report("revoke", ncclGetLastError(comm));
    return 1;
  }
  ncclComm_t shrunk = nullptr;
  result = ncclCommShrink(comm, &failed, 1, &shrunk, nullptr, variant.shrinkFlags);
  // Non-blocking: the survivors meet after the call returned; then the new
  // communicator is made.
  if (variant.nonBlocking && result == ncclSuccess) result = settle(comm, seconds(30));
  if (variant.nonBlocking && result == ncclSuccess) result = settle(shrunk, seconds(30));
  reportOutcome(reporter, "shrink", outcomeOf(result));
  if (result != ncclSuccess) return 1;
  int newRank = -1, newCount = -1;
  ncclCommUserRank(shrunk, &newRank);
  ncclCommCount(shrunk, &newCount);
  reporter.report("new_rank", std::to_string(newRank));
  reporter.report("new_count", std::to_string(newCount));
  // Each rank contributes (its old rank + 1) at every element, so the sum
  // shows exactly which ranks took part.
  std::string sums;
  for (int i = 0; i < 3; ++i) {
    std::vector<float> values(kCount + i * 7, static_cast<float>(rank + 1));
    result = ncclAllReduce(values.data(), values.data(), values.size(), ncclFloat, ncclSum, shrunk, nullptr);
    if (result != ncclSuccess) break;
    bool same = std::all_of(values.begin(), values.end(), [&](float v) { return v == values.front(); });
    sums += std::to_string(static_cast<long long>(values.front())) + (same ? "" : "!uneven") + " ";
  }
  reportOutcome(reporter, "after", outcomeOf(result));
  reporter.report("sums", sums);
  ncclCommDestroy(shrunk);
  ncclCommDestroy(comm);
  return 0;
}

TEST_P(Shrink, SurvivorsOfAKilledRankShrinkAndGoOn) {
  const Variant variant = GetParam();
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "10");
      setEnvironment("HORA_TRANSPORT", variant.transport);
      return runUntilFailureThenShrink(reporter, rank, variant);
    }));
  ASSERT_TRUE(ranks[kVictim]->waitFor("running", seconds(20))) << reportedOutcome(*ranks[kVictim], "init");
  ranks[kVictim]->signal(SIGKILL);
  // Ranks 0, 1, 3: the sum of (old rank + 1) over them, 1 + 2 + 4.
  const std::string expected = "7 7 7 ";
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    ChildProcess& survivor = *ranks[rank];
    ChildExit exit = survivor.waitExit(seconds(30));
    ASSERT_TRUE(exit.exited) << "rank " << rank << ": " << exit.describe();
    EXPECT_EQ(survivor.value("failed_first"), std::to_string(kVictim))
        << "rank " << rank << ": " << survivor.value("error");
    EXPECT_EQ(reportedOutcome(survivor, "shrink").result, ncclSuccess) << reportedOutcome(survivor, "shrink");
    EXPECT_EQ(survivor.value("new_rank"), std::to_string(rank < kVictim ? rank : rank - 1)) << "rank " << rank;
    EXPECT_EQ(survivor.value("new_count"), std::to_string(kRanks - 1)) << "rank " << rank;
    EXPECT_EQ(reportedOutcome(survivor, "after").result, ncclSuccess) << reportedOutcome(survivor, "after");
    EXPECT_EQ(survivor.value("sums"), expected) << "rank " << rank;
    EXPECT_EQ(exit.code, 0) << "rank " << rank;
  }
}

// Three healthy ranks shrink, but rank 1 leaves out another rank than the
// others: nobody may form a communicator; every member's shrink fails,
// saying the lists differ.
TEST(ShrinkMisuse, MembersThatDisagreeOnTheExcludedRanksAllFail) {
  constexpr int kAll = 4;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kAll; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "5");
      ncclComm_t comm = joinCommunicator(reporter, kAll, rank);
      if (comm == nullptr) return 1;
      if (rank == 3) {
        std::this_thread::sleep_for(seconds(2));  // excluded: takes no part
        ncclCommDestroy(comm);
        return 0;
      }
      // Ranks 0 and 2 leave out rank 3; rank 1 leaves out ranks 3 and 2.
      int excluded[2] = {3, 2};
      const int count = rank == 1 ? 2 : 1;
      ncclComm_t shrunk = nullptr;
      reportOutcome(reporter, "shrink",
                    outcomeOf(ncclCommShrink(comm, excluded, count, &shrunk, nullptr, NCCL_SHRINK_DEFAULT)));
      if (shrunk != nullptr) ncclCommDestroy(shrunk);
      ncclCommDestroy(comm);
      return 0;
    }));
  // Rank 0, the first remaining rank by every list, hears all three ask
  // and answers each with the disagreement.
  for (int rank : {0, 1, 2}) {
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();
    Outcome shrink = reportedOutcome(*ranks[rank], "shrink");
    EXPECT_NE(shrink.result, ncclSuccess) << "rank " << rank << ": " << shrink;
  }
  Outcome leader = reportedOutcome(*ranks[0], "shrink");
  EXPECT_EQ(leader.result, ncclInvalidUsage) << leader;
  EXPECT_THAT(leader.text, HasSubstr("excludeRanksList")) << leader;
  // Both lists are shown, sorted.
  EXPECT_THAT(leader.text, HasSubstr("rank 1 excludes ranks [2, 3] and rank 0 excludes ranks [3]")) << leader;
  EXPECT_THAT(reportedOutcome(*ranks[1], "shrink").text, HasSubstr("[2, 3]")) << reportedOutcome(*ranks[1], "shrink");
}

// Three ranks leave out the fourth, the stranger, and shrink. The stranger,
// alive, shrinks too, with a list of its own:
// - rank 3 leaving out rank 2: by its list rank 0 leads, which does not
//   serve it; leaving out rank 0: rank 1 leads, which waits for its own
//   leader;
// - rank 0 leaving out rank 3: by its list it leads itself, and waits for
//   ranks 1 and 2, which ask rank 1 instead; it learns from rank 1 that the
//   others went on without it, before it begins (it starts late) or while
//   it waits (it starts first), also where it runs on another host (a
//   host simulated with HORA_HOSTID, where its process cannot be seen).
// The stranger must fail at once with ncclInvalidUsage saying the lists
// differ, not wait for HORA_TIMEOUT; the three others must shrink and go on.
struct Stranger {
  int rank;
  int excludes;
  int startsAfterMs;        // the stranger's delay before its shrink
  int othersStartAfterMs;   // the others' delay (rank 0, when not the stranger, waits 1.5 s more)
  std::string name;
  bool onAnotherHost = false;  // the stranger's HORA_HOSTID differs from the others'
  friend void PrintTo(const Stranger& stranger, std::ostream* out) { *out << stranger.name; }
};

class ShrinkByAnExcludedRank : public ::testing::TestWithParam<Stranger> {};

INSTANTIATE_TEST_SUITE_P(Lists, ShrinkByAnExcludedRank,
                         ::testing::Values(Stranger{3, 2, 500, 0, "Rank3LeavesOutRank2"},
                                           Stranger{3, 0, 500, 0, "Rank3LeavesOutRank0"},
                                           Stranger{0, 3, 1500, 0, "Rank0LeavesOutRank3AndStartsLate"},
                                           Stranger{0, 3, 0, 1000, "Rank0LeavesOutRank3AndStartsFirst"},
                                           Stranger{0, 3, 0, 1000, "Rank0OnAnotherHostLeavesOutRank3", true}),
                         [](const auto& info) { return info.param.name; });

TEST_P(ShrinkByAnExcludedRank, FailsAtOnceAndTheOthersGoOn) {
  constexpr int kAll = 4;
  const Stranger stranger = GetParam();
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kAll; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "20");
      if (stranger.onAnotherHost) setEnvironment("HORA_HOSTID", rank == stranger.rank ? "host-b" : "host-a");
      ncclComm_t comm = joinCommunicator(reporter, kAll, rank);
      if (comm == nullptr) return 1;
      int excluded = rank == stranger.rank ? stranger.excludes : stranger.rank;
      int delayMs = rank == stranger.rank ? stranger.startsAfterMs : stranger.othersStartAfterMs;
      // Rank 3 asks while ranks 1 and 2 wait for rank 0, the last to start.
      if (rank == 0 && rank != stranger.rank) delayMs += 1500;
      std::this_thread::sleep_for(milliseconds(delayMs));
      ncclComm_t shrunk = nullptr;
      const auto start = std::chrono::steady_clock::now();
      reportOutcome(reporter, "shrink",
                    outcomeOf(ncclCommShrink(comm, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT)));
      reporter.report("shrink_ms", std::to_string(std::chrono::duration_cast<milliseconds>(
                                                      std::chrono::steady_clock::now() - start)
                                                      .count()));
      if (shrunk != nullptr) {
        long long value = rank + 1;
        reportOutcome(reporter, "after",
                      outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, shrunk, nullptr)));
        reporter.report("sum", std::to_string(value));
        ncclCommDestroy(shrunk);
      }
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < kAll; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(30));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();
  }
  Outcome refused = reportedOutcome(*ranks[stranger.rank], "shrink");
  EXPECT_EQ(refused.result, ncclInvalidUsage) << refused;
  EXPECT_THAT(refused.text, HasSubstr("same excludeRanksList")) << refused;
  EXPECT_LT(std::stoi(ranks[stranger.rank]->value("shrink_ms")), 5000) << refused;
  int expectedSum = 0;
  for (int rank = 0; rank < kAll; ++rank)
    if (rank != stranger.rank) expectedSum += rank + 1;
  for (int rank = 0; rank < kAll; ++rank) {
    if (rank == stranger.rank) continue;
    EXPECT_EQ(reportedOutcome(*ranks[rank], "shrink").result, ncclSuccess)
        << "rank " << rank << ": " << reportedOutcome(*ranks[rank], "shrink");
    EXPECT_EQ(reportedOutcome(*ranks[rank], "after").result, ncclSuccess) << "rank " << rank;
    EXPECT_EQ(ranks[rank]->value("sum"), std::to_string(expectedSum)) << "rank " << rank;
  }
}

// Arguments checked before anything is exchanged.
TEST(ShrinkMisuse, BadArgumentsAreRefused) {
  const int port = freeLoopbackPort();
  ChildProcess only([=](Reporter& reporter) {
    useRendezvous(port, "5");
    ncclComm_t comm = joinCommunicator(reporter, 1, 0);
    if (comm == nullptr) return 1;
    ncclComm_t shrunk = nullptr;
    int self = 0, outside = 5, twice[2] = {0, 0};
    reportOutcome(reporter, "self", outcomeOf(ncclCommShrink(comm, &self, 1, &shrunk, nullptr, 0)));
    reportOutcome(reporter, "outside", outcomeOf(ncclCommShrink(comm, &outside, 1, &shrunk, nullptr, 0)));
    reportOutcome(reporter, "twice", outcomeOf(ncclCommShrink(comm, twice, 2, &shrunk, nullptr, 0)));
    reportOutcome(reporter, "null_list", outcomeOf(ncclCommShrink(comm, nullptr, 1, &shrunk, nullptr, 0)));
    reportOutcome(reporter, "flags", outcomeOf(ncclCommShrink(comm, &outside, 1, &shrunk, nullptr, 7)));
    reportOutcome(reporter, "revoke_flags", outcomeOf(ncclCommRevoke(comm, 3)));
    ncclCommDestroy(comm);
    return 0;
  });
  ChildExit exit = only.waitExit(seconds(20));
  ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe();
  for (const char* name : {"self", "outside", "twice", "null_list", "flags", "revoke_flags"})
    EXPECT_EQ(reportedOutcome(only, name).result, ncclInvalidArgument) << name << ": " << reportedOutcome(only, name);
  EXPECT_THAT(reportedOutcome(only, "self").text, HasSubstr("excludeRanksList"));
  EXPECT_THAT(reportedOutcome(only, "flags").text, HasSubstr("shrinkFlags"));
}

}  // namespace
}  // namespace hora_api_test
