// ncclCommSplit with ranks as separate processes, as torch's new_group
// calls it: each group's rendezvous root runs in the process of its first
// rank, and the children carry collectives of their own. Blocking, and on
// non-blocking communicators (the split returns at once; each rank waits
// as NCCL's programs do, polling the parent, then uses the child).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "nonblocking_support.h"
#include "rank_process.h"

namespace hora_api_test {
namespace {

using std::chrono::seconds;

class CommSplitProcesses : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(Modes, CommSplitProcesses, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "NonBlocking" : "Blocking"; });

TEST_P(CommSplitProcesses, FourRanksSplitInTwoByParity) {
  constexpr int kRanks = 4;
  const bool nonBlocking = GetParam();
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "20");
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = nonBlocking ? 0 : 1;
      ncclComm_t comm = joinCommunicator(reporter, kRanks, rank, &config);
      if (comm == nullptr) return 1;
      ncclComm_t child = nullptr;
      // Colour by parity, key reversing the order inside each group.
      ncclResult_t result = ncclCommSplit(comm, rank % 2, -rank, &child, nullptr);
      if (result == ncclSuccess) result = settle(comm, seconds(30));  // the parent's state covers the split
      reportOutcome(reporter, "split", outcomeOf(result));
      if (child == nullptr) return 1;
      int childRank = -1, childCount = -1;
      ncclCommUserRank(child, &childRank);
      ncclCommCount(child, &childCount);
      reporter.report("child_rank", std::to_string(childRank));
      reporter.report("child_count", std::to_string(childCount));
      long long value = 1LL << rank;
      reportOutcome(reporter, "allreduce",
                    outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, child, nullptr)));
      reporter.report("sum", std::to_string(value));
      ncclCommDestroy(child);
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < kRanks; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(30));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe() << " "
                                               << reportedOutcome(*ranks[rank], "split");
    EXPECT_EQ(reportedOutcome(*ranks[rank], "allreduce").result, ncclSuccess) << "rank " << rank;
    EXPECT_EQ(ranks[rank]->value("child_count"), "2") << "rank " << rank;
    // Inside each group the higher parent rank comes first (key = -rank).
    EXPECT_EQ(ranks[rank]->value("child_rank"), rank < 2 ? "1" : "0") << "rank " << rank;
    EXPECT_EQ(ranks[rank]->value("sum"), rank % 2 == 0 ? "5" : "10") << "rank " << rank;
  }
}

}  // namespace
}  // namespace hora_api_test
