// ProcessWatch: a child killed is reported at once, through a pidfd and
// through the polling fallback; processes that keep running are never
// reported, and stopping the watch is prompt.
#include "base/process_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace hora {
namespace {

using namespace std::chrono_literals;

// A child that waits until killed.
pid_t pausedChild() {
  const pid_t child = ::fork();
  if (child == 0) {
    while (true) ::pause();
  }
  return child;
}

// What the watch reported, waited for with a deadline.
struct Report {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<ProcessWatch::Watched> gone;
  int calls = 0;

  ProcessWatch::OnGone callback() {
    return [this](const ProcessWatch::Watched& process) {
      std::lock_guard<std::mutex> lock(mutex);
      gone = process;
      ++calls;
      changed.notify_all();
    };
  }
  bool waitFor(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return gone.has_value(); });
  }
};

void expectKilledChildReported(bool pidfds) {
  const pid_t running = pausedChild(), killed = pausedChild();
  ASSERT_GT(running, 0);
  ASSERT_GT(killed, 0);
  Report report;
  {
    ProcessWatch watch({{running, 1}, {killed, 2}}, report.callback(), pidfds);
    if (!pidfds) EXPECT_EQ(watch.watchedByPidfd(), 0);
    EXPECT_FALSE(report.waitFor(200ms)) << "a running process was reported gone";
    const auto killedAt = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(killed, SIGKILL), 0);
    ASSERT_TRUE(report.waitFor(5s)) << "the killed process was never reported";
    EXPECT_LT(std::chrono::steady_clock::now() - killedAt, 1s);
    EXPECT_EQ(report.gone->rank, 2);
    EXPECT_EQ(report.gone->pid, killed);
  }
  EXPECT_EQ(report.calls, 1);
  ::kill(running, SIGKILL);
  ::waitpid(running, nullptr, 0);
  ::waitpid(killed, nullptr, 0);
}

TEST(ProcessWatch, AKilledProcessIsReportedAtOnce) {
  expectKilledChildReported(/*pidfds=*/true);
}

TEST(ProcessWatch, ThePollingFallbackReportsItToo) {
  expectKilledChildReported(/*pidfds=*/false);
}

TEST(ProcessWatch, RunningProcessesAreNeverReportedAndStoppingIsPrompt) {
  const pid_t child = pausedChild();
  ASSERT_GT(child, 0);
  Report report;
  for (bool pidfds : {true, false}) {
    auto watch = std::make_unique<ProcessWatch>(
        std::vector<ProcessWatch::Watched>{{child, 1}, {::getpid(), 0}}, report.callback(), pidfds);
    std::this_thread::sleep_for(150ms);
    const auto stoppedAt = std::chrono::steady_clock::now();
    watch.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - stoppedAt, 500ms);
  }
  EXPECT_EQ(report.calls, 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace hora
