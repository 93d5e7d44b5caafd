// ncclCommGetAsyncError as torch's watchdog uses it: polled from another
// thread, all the time, while the communicator runs collectives. It must
// answer at once (never wait for a collective to finish) and say success
// while all is well.
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

TEST(AsyncError, PolledFromAnotherThreadDuringCollectivesAnswersAtOnce) {
  ncclComm_t comms[2];
  const int devices[2] = {0, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, devices), ncclSuccess);

  std::atomic<bool> running{true};
  long failures = 0;
  std::vector<Clock::duration> polls;  // how long each poll took
  polls.reserve(1 << 20);
  std::thread watchdog([&] {
    while (running.load()) {
      for (ncclComm_t comm : comms) {
        ncclResult_t state = ncclInternalError;
        const auto start = Clock::now();
        const ncclResult_t result = ncclCommGetAsyncError(comm, &state);
        if (polls.size() < polls.capacity()) polls.push_back(Clock::now() - start);
        if (result != ncclSuccess || state != ncclSuccess) ++failures;
      }
    }
  });

  // Large enough that each all-reduce takes a while: a poll that waited
  // for one would take about as long.
  const std::size_t count = 1 << 20;
  constexpr int kCalls = 20;
  std::vector<std::vector<float>> data(2, std::vector<float>(count, 1.0f));
  std::vector<std::thread> ranks;
  const auto collectivesStart = Clock::now();
  for (int rank = 0; rank < 2; ++rank)
    ranks.emplace_back([&, rank] {
      for (int i = 0; i < kCalls; ++i)
        ncclAllReduce(data[rank].data(), data[rank].data(), count, ncclFloat, ncclMax, comms[rank],
                      nullptr);
    });
  for (auto& t : ranks) t.join();
  const auto perCall = (Clock::now() - collectivesStart) / kCalls;
  running = false;
  watchdog.join();

  EXPECT_EQ(failures, 0);
  ASSERT_GT(polls.size(), 100u) << "the watchdog barely ran";
  // A poll is a few atomic loads and short locks. On a loaded machine a
  // single poll may still be descheduled for a time slice, so the test
  // looks at them all: one that waited for the collectives would make
  // most polls last about as long as a call; here the typical poll is
  // microseconds and hardly any lasts half a call.
  std::sort(polls.begin(), polls.end());
  const auto median = polls[polls.size() / 2];
  const auto slow = std::count_if(polls.begin(), polls.end(), [&](Clock::duration d) { return d > perCall / 2; });
  EXPECT_LT(median, std::chrono::microseconds(100))
      << std::chrono::duration_cast<std::chrono::nanoseconds>(median).count() << " ns";
  EXPECT_LE(slow * 100, static_cast<long>(polls.size())) << slow << " of " << polls.size()
                                                           << " polls took more than half a call";
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
