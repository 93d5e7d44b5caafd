// The Reducer over real hora communicators, ranks as threads: the shared
// scenarios for 1-4 ranks, a layout mismatch, and a rank that leaves.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "comm_world.h"
#include "hora/ddp/process_group.h"
#include "hora/ddp/sampler.h"
#include "hora/error.h"
#include "reducer_scenarios.h"

namespace hora::ddp::testing {
namespace {

// Short: a failing test must not sit out the default five minutes.
constexpr std::chrono::milliseconds kTimeout{10000};

class ReducerOnCommunicators : public ::testing::TestWithParam<int> {
 protected:
  void runOnAllRanks(const std::function<void(const GroupPtr&)>& scenario) {
    runWithCommunicators(GetParam(), kTimeout,
                         [&](Communicator& communicator) { scenario(wrapCommunicator(communicator)); });
  }
};

TEST_P(ReducerOnCommunicators, BroadcastAndAveraging) { runOnAllRanks(expectBroadcastAndAveraging); }
TEST_P(ReducerOnCommunicators, NoSyncAccumulation) { runOnAllRanks(expectNoSyncAccumulation); }
TEST_P(ReducerOnCommunicators, Hooks) { runOnAllRanks(expectHooks); }
TEST_P(ReducerOnCommunicators, SixteenBitBuckets) { runOnAllRanks(expectSixteenBitBuckets); }
TEST_P(ReducerOnCommunicators, UsageErrors) { runOnAllRanks(expectUsageErrors); }

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerOnCommunicators, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

class ReducerFailuresOnCommunicators : public ReducerOnCommunicators {};

TEST_P(ReducerFailuresOnCommunicators, LayoutMismatch) {
  runOnAllRanks(expectLayoutMismatchDetected);
}

TEST_P(ReducerFailuresOnCommunicators, RankLeaves) {
  runWithCommunicators(GetParam(), std::chrono::milliseconds(3000), [](Communicator& communicator) {
    expectFailureWhenARankLeaves(
        wrapCommunicator(communicator), [&] { communicator.abort(); }, std::chrono::seconds(20));
  });
}

TEST_P(ReducerFailuresOnCommunicators, AHookFailingOnOneRankFailsEveryRank) {
  runWithCommunicators(GetParam(), std::chrono::milliseconds(3000), [](Communicator& communicator) {
    expectAHookFailingOnOneRankFailsEveryRank(communicator, std::chrono::seconds(2));
  });
}

TEST_P(ReducerFailuresOnCommunicators, SurvivorsShrinkAndGoOn) {
  runWithCommunicators(GetParam(), std::chrono::milliseconds(3000), [](Communicator& communicator) {
    expectSurvivorsGoOnWhenARankLeaves(communicator, [&] { communicator.abort(); });
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerFailuresOnCommunicators, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// A sampler placed by its communicator takes the communicator's size and
// rank, as PyTorch's takes the process group's, where they are left out;
// values given are used as they are, as PyTorch uses them.
TEST(SamplerOnCommunicators, TakesSizeAndRankFromTheCommunicatorUnlessGiven) {
  runWithCommunicators(3, kTimeout, [](Communicator& communicator) {
    const int rank = communicator.rank();
    DistributedSampler placed(10, communicator, {.seed = 7});
    EXPECT_EQ(placed.options().numReplicas, 3);
    EXPECT_EQ(placed.options().rank, rank);
    DistributedSampler explicitly(10, {.numReplicas = 3, .rank = rank, .seed = 7});
    EXPECT_EQ(placed.indices(), explicitly.indices());
    EXPECT_EQ(DistributedSampler(10, communicator, {.numReplicas = 3, .rank = rank}).numSamples(), 4u);
    // Every rank reading the whole set, in order (an evaluation pass).
    const DistributedSampler whole(6, communicator, {.numReplicas = 1, .rank = 0, .shuffle = false});
    EXPECT_EQ(whole.indices(), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5})) << "rank " << rank;
    // Explicitly rank 0 of 2 on every rank.
    const DistributedSampler first(6, communicator, {.numReplicas = 2, .rank = 0, .shuffle = false});
    EXPECT_EQ(first.indices(), (std::vector<std::size_t>{0, 2, 4})) << "rank " << rank;
    // Two replicas, each rank its own place: rank 2 has none, as in PyTorch.
    if (rank < 2) {
      EXPECT_EQ(DistributedSampler(10, communicator, {.numReplicas = 2}).numSamples(), 5u);
    } else {
      try {
        DistributedSampler outside(10, communicator, {.numReplicas = 2});
        ADD_FAILURE() << "rank 2 was taken as a place among 2 replicas";
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
        EXPECT_NE(std::string(error.what()).find("rank 2 is outside [0, 1]"), std::string::npos) << error.what();
      }
    }
  });
}

}  // namespace
}  // namespace hora::ddp::testing
