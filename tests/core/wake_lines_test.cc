// Ranks that share cores sleep while they wait, and their peers wake them
// (transport/wake_line.h):
//  - the handshake itself, between two threads, loses no wake: a lost one
//    would leave a waiter asleep until its (here very long) time ran out;
//  - a rank whose peer is late uses next to no CPU while it waits, and
//    results stay exact.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <thread>
#include <vector>

#include "nccl.h"
#include "support/rank_threads.h"
#include "transport/wake_line.h"

namespace {

using Clock = std::chrono::steady_clock;
using hora::transport::WakeLine;

// Whether this kernel lets a thread sleep on two words at once
// (futex_waitv: Linux 5.16, and not filtered by a sandbox). Words that
// already differ from what is expected: the call returns at once.
bool sleepsOnSeveralWords() {
  const std::uint32_t words[2] = {0, 0};
  const hora::FutexExpectation differing[2] = {{&words[0], 1}, {&words[1], 1}};
  return hora::futexWaitAny(differing, std::chrono::seconds(1)) != hora::FutexSleep::Unsupported;
}

// Two threads pass a token back and forth through a counter each, sleeping
// on their wake line while it is the other's turn, as a rank sleeps on its
// connections'. A lost wake shows as a sleep that lasts until the waiter's
// time runs out (10 s here; a turn takes microseconds).
TEST(WakeLines, APingPongLosesNoWake) {
  constexpr std::uint32_t kTurns = 20000;
  constexpr auto kSleepLimit = std::chrono::seconds(10);
  struct Side {
    alignas(64) std::uint32_t turnsDone = 0;  // what the other side waits for
    WakeLine line{};                          // where this side sleeps
  };
  Side sides[2];
  std::atomic<int> longSleeps{0};
  auto play = [&](int me) {
    Side& mine = sides[me];
    Side& other = sides[1 - me];
    for (std::uint32_t turn = 0; turn < kTurns; ++turn) {
      // My turn comes when the other side has done as many turns as I have
      // (side 0 starts) or one more (side 1).
      const std::uint32_t awaited = turn + static_cast<std::uint32_t>(me);
      auto arrived = [&] {
        return std::atomic_ref<std::uint32_t>(other.turnsDone).load(std::memory_order_acquire) >= awaited;
      };
      while (!arrived()) {
        const std::uint32_t bell = hora::transport::announceSleep(mine.line);
        if (!arrived()) {
          const auto before = Clock::now();
          const hora::FutexExpectation expectation{&mine.line.bell, bell};
          hora::futexWaitAny({&expectation, 1}, std::chrono::duration_cast<std::chrono::microseconds>(kSleepLimit));
          if (Clock::now() - before >= kSleepLimit / 2) ++longSleeps;
        }
        hora::transport::endSleep(mine.line);
      }
      std::atomic_ref<std::uint32_t>(mine.turnsDone).store(turn + 1, std::memory_order_release);
      hora::transport::wakeIfSleeping(other.line);
    }
  };
  const auto start = Clock::now();
  std::thread second(play, 1);
  play(0);
  second.join();
  EXPECT_EQ(longSleeps.load(), 0) << "a wake was lost";
  EXPECT_EQ(sides[0].turnsDone, kTurns);
  EXPECT_EQ(sides[1].turnsDone, kTurns);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
}

// The same with several words at once (futex_waitv), as a rank that waits
// on both its ring neighbours: the side that is woken is the one whose
// word changed, whichever of its two it was.
TEST(WakeLines, ASleeperOnTwoLinesWakesForEither) {
  if (!sleepsOnSeveralWords()) GTEST_SKIP() << "this kernel (or its sandbox) offers no futex_waitv";
  WakeLine lines[2]{};
  for (int which = 0; which < 2; ++which) {
    std::atomic<bool> asleep{false};
    std::thread sleeper([&] {
      const hora::FutexExpectation expected[2] = {{&lines[0].bell, hora::transport::announceSleep(lines[0])},
                                                  {&lines[1].bell, hora::transport::announceSleep(lines[1])}};
      asleep = true;
      const auto before = Clock::now();
      hora::futexWaitAny(expected, std::chrono::seconds(10));
      EXPECT_LT(Clock::now() - before, std::chrono::seconds(5)) << "not woken through line " << which;
      hora::transport::endSleep(lines[0]);
      hora::transport::endSleep(lines[1]);
    });
    while (!asleep) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // well asleep by now
    hora::transport::wakeIfSleeping(lines[which]);
    sleeper.join();
  }
}

// Four ranks as threads, all on one CPU: they share it, so they sleep while
// they wait. While one rank is late, the others' waiting costs the process
// little CPU; before, yielding and then waking every 50 us to look cost
// several times as much (measured: see the bound).
TEST(WakeLines, RanksOnOneCoreSleepWhileAPeerIsLate) {
  // A rank of a ring waits on two connections at once: without futex_waitv
  // it sleeps in poll() slices, as before wake lines.
  if (!sleepsOnSeveralWords()) GTEST_SKIP() << "this kernel (or its sandbox) offers no futex_waitv";
  constexpr int kRanks = 4;
  constexpr auto kLate = std::chrono::milliseconds(1500);
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  // Threads made from here on inherit the mask: the ranks' own, read at init.
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  std::vector<ncclComm_t> comms(kRanks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::clock_t cpuBefore = 0, cpuAfter = 0;
  hora::test_support::onEachRank(kRanks, [&](int rank) {
    std::vector<std::int32_t> data(4096, rank + 1);
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclInt32, ncclSum, comms[rank], nullptr),
              ncclSuccess);
    if (rank == 0) {
      cpuBefore = std::clock();
      std::this_thread::sleep_for(kLate);
      cpuAfter = std::clock();
    }
    ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclInt32, ncclSum, comms[rank], nullptr),
              ncclSuccess);
    for (std::int32_t value : data) ASSERT_EQ(value, 4 * (1 + 2 + 3 + 4));
  });
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  sched_setaffinity(0, sizeof(original), &original);
  const double cpuSeconds = static_cast<double>(cpuAfter - cpuBefore) / CLOCKS_PER_SEC;
  RecordProperty("cpu_seconds_while_waiting", std::to_string(cpuSeconds));
  EXPECT_LT(cpuSeconds, 0.1) << "ranks waiting for a late peer kept using the CPU";
}

}  // namespace
