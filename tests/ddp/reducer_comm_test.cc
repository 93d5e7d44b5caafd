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

TEST_P(ReducerFailuresOnCommunicators, SurvivorsShrinkAndGoOn) {
  runWithCommunicators(GetParam(), std::chrono::milliseconds(3000), [](Communicator& communicator) {
    expectSurvivorsGoOnWhenARankLeaves(communicator, [&] { communicator.abort(); });
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerFailuresOnCommunicators, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// A sampler placed by its communicator takes the communicator's size and
// rank, as PyTorch's takes the process group's; values that contradict the
// communicator are refused.
TEST(SamplerOnCommunicators, TakesSizeAndRankFromTheCommunicator) {
  runWithCommunicators(3, kTimeout, [](Communicator& communicator) {
    const int rank = communicator.rank();
    DistributedSampler placed(10, communicator, {.seed = 7});
    EXPECT_EQ(placed.options().numReplicas, 3);
    EXPECT_EQ(placed.options().rank, rank);
    DistributedSampler explicitly(10, {.numReplicas = 3, .rank = rank, .seed = 7});
    EXPECT_EQ(placed.indices(), explicitly.indices());
    EXPECT_EQ(DistributedSampler(10, communicator, {.numReplicas = 3, .rank = rank}).numSamples(), 4u);
    try {
      DistributedSampler contradicting(10, communicator, {.numReplicas = 2});
      ADD_FAILURE() << "numReplicas 2 was taken with a communicator of 3";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(error.what()).find("numReplicas 2 and rank 0 were given with a communicator of 3 ranks"),
                std::string::npos)
          << error.what();
    }
  });
}

}  // namespace
}  // namespace hora::ddp::testing
