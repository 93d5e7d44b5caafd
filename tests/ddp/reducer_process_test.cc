// The Reducer with ranks as processes: this program runs under
// `hora-run -n N`, every rank runs the same tests in the same order on one
// communicator created from env://. A rank that leaves does so by exiting.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>

#include "hora/communicator.h"
#include "hora/ddp/process_group.h"
#include "reducer_scenarios.h"

namespace hora::ddp::testing {
namespace {

// Short: a rank that fails must not leave its peers waiting for minutes.
constexpr std::chrono::milliseconds kTimeout{10000};

class WorldEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    communicator = Communicator::fromInitMethod("env://", -1, -1, CommunicatorOptions{kTimeout});
  }
  void TearDown() override { communicator.reset(); }
  std::unique_ptr<Communicator> communicator;
};

WorldEnvironment* world =
    static_cast<WorldEnvironment*>(::testing::AddGlobalTestEnvironment(new WorldEnvironment));

GroupPtr group() { return wrapCommunicator(*world->communicator); }

TEST(ReducerInProcesses, BroadcastAndAveraging) { expectBroadcastAndAveraging(group()); }
TEST(ReducerInProcesses, NoSyncAccumulation) { expectNoSyncAccumulation(group()); }
TEST(ReducerInProcesses, Hooks) { expectHooks(group()); }
TEST(ReducerInProcesses, SixteenBitBuckets) { expectSixteenBitBuckets(group()); }
TEST(ReducerInProcesses, UsageErrors) { expectUsageErrors(group()); }
TEST(ReducerInProcesses, LayoutMismatch) {
  if (world->communicator->size() < 2) GTEST_SKIP() << "needs two ranks";
  expectLayoutMismatchDetected(group());
}

// Run alone (--gtest_filter=*Leaving*): the last rank exits right after
// constructing its Reducer; the others must see their finish() fail.
TEST(ReducerInProcessesLeaving, RankLeaves) {
  if (world->communicator->size() < 2) GTEST_SKIP() << "needs two ranks";
  expectFailureWhenARankLeaves(
      group(), [] { std::_Exit(0); }, std::chrono::seconds(30));
}

// Run alone (--gtest_filter=*Survivors*) under hora-run --keep-going: the
// last rank is killed (SIGKILL) right after constructing its Reducer; the
// others shrink past it and go on averaging over themselves for 3 s, longer
// than hora-run's grace before it stops the survivors of a failure without
// --keep-going. hora-run then exits with 137, the killed rank's status.
TEST(ReducerInProcessesSurvivors, ShrinkAndGoOnAfterARankIsKilled) {
  if (world->communicator->size() < 2) GTEST_SKIP() << "needs two ranks";
  expectSurvivorsGoOnWhenARankLeaves(
      *world->communicator, [] { ::raise(SIGKILL); }, std::chrono::seconds(3));
}

}  // namespace
}  // namespace hora::ddp::testing
