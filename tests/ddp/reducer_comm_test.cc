// The Reducer over real hora communicators, ranks as threads: the shared
// scenarios for 1-4 ranks, a layout mismatch, and a rank that leaves.
#include <gtest/gtest.h>

#include <chrono>

#include "comm_world.h"
#include "hora/ddp/process_group.h"
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
  runWithCommunicators(GetParam(), std::chrono::milliseconds(3000), expectSurvivorsGoOnWhenARankLeaves);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerFailuresOnCommunicators, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace hora::ddp::testing
