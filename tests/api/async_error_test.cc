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
  long polls = 0, failures = 0;
  Clock::duration slowest{0};
  std::thread watchdog([&] {
    while (running.load()) {
      for (ncclComm_t comm : comms) {
        ncclResult_t state = ncclInternalError;
        const auto start = Clock::now();
        const ncclResult_t result = ncclCommGetAsyncError(comm, &state);
        slowest = std::max(slowest, Clock::now() - start);
        if (result != ncclSuccess || state != ncclSuccess) ++failures;
        ++polls;
      }
    }
  });

  // Large enough that each all-reduce takes a while: a poll that waited
  // for one would take as long.
  const std::size_t count = 1 << 20;
  std::vector<std::vector<float>> data(2, std::vector<float>(count, 1.0f));
  std::vector<std::thread> ranks;
  const auto collectivesStart = Clock::now();
  for (int rank = 0; rank < 2; ++rank)
    ranks.emplace_back([&, rank] {
      for (int i = 0; i < 20; ++i)
        ncclAllReduce(data[rank].data(), data[rank].data(), count, ncclFloat, ncclMax, comms[rank],
                      nullptr);
    });
  for (auto& t : ranks) t.join();
  const auto collectivesTime = Clock::now() - collectivesStart;
  running = false;
  watchdog.join();

  EXPECT_EQ(failures, 0);
  EXPECT_GT(polls, 100) << "the watchdog barely ran";
  // A poll is a few atomic loads and short locks; one that took a tenth of
  // the whole run was held up by the collectives.
  EXPECT_LT(slowest, collectivesTime / 10)
      << std::chrono::duration_cast<std::chrono::microseconds>(slowest).count() << " us";
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
