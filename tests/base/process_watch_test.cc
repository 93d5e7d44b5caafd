// ProcessWatch: a child killed is reported at once, through a pidfd and
// through the polling fallback, and so is each later one; processes that
// keep running are never reported, and stopping the watch is prompt.
#include "base/process_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hora {
namespace {

using namespace std::chrono_literals;

// Children that wait until killed; any left are killed and reaped at the
// end of the scope, also when an assertion returns early.
class PausedChildren {
 public:
  pid_t start() {
    const pid_t child = ::fork();
    if (child == 0) {
      while (true) ::pause();
    }
    if (child > 0) pids_.push_back(child);
    return child;
  }
  ~PausedChildren() {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

 private:
  std::vector<pid_t> pids_;
};

// What the watch reported, waited for with a deadline.
struct Reports {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<ProcessWatch::Watched> gone;

  ProcessWatch::OnGone callback() {
    return [this](const ProcessWatch::Watched& process) {
      std::lock_guard<std::mutex> lock(mutex);
      gone.push_back(process);
      changed.notify_all();
    };
  }
  // Waits until `count` reports came; false at the timeout.
  bool waitFor(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return gone.size() >= count; });
  }
};

void expectEachKilledChildReported(bool pidfds) {
  PausedChildren children;
  const pid_t running = children.start(), first = children.start(), second = children.start();
  ASSERT_GT(running, 0);
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  Reports reports;
  ProcessWatch watch({{running, 1}, {first, 2}, {second, 3}}, reports.callback(), pidfds);
  if (!pidfds) EXPECT_EQ(watch.watchedByPidfd(), 0);
  EXPECT_FALSE(reports.waitFor(1, 200ms)) << "a running process was reported gone";
  for (auto [pid, rank] : {std::pair{first, 2}, std::pair{second, 3}}) {
    const std::size_t before = reports.gone.size();
    const auto killedAt = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_TRUE(reports.waitFor(before + 1, 5s)) << "rank " << rank << "'s process was never reported";
    EXPECT_LT(std::chrono::steady_clock::now() - killedAt, 1s);
    std::lock_guard<std::mutex> lock(reports.mutex);
    EXPECT_EQ(reports.gone.back().rank, rank);
    EXPECT_EQ(reports.gone.back().pid, pid);
  }
  EXPECT_FALSE(reports.waitFor(3, 300ms)) << "reported more than the two that exited";
}

TEST(ProcessWatch, EachKilledProcessIsReportedAtOnce) { expectEachKilledChildReported(/*pidfds=*/true); }

TEST(ProcessWatch, ThePollingFallbackReportsEachToo) { expectEachKilledChildReported(/*pidfds=*/false); }

TEST(ProcessWatch, RunningProcessesAreNeverReportedAndStoppingIsPrompt) {
  PausedChildren children;
  const pid_t child = children.start();
  ASSERT_GT(child, 0);
  Reports reports;
  for (bool pidfds : {true, false}) {
    auto watch = std::make_unique<ProcessWatch>(
        std::vector<ProcessWatch::Watched>{{child, 1}, {::getpid(), 0}}, reports.callback(), pidfds);
    std::this_thread::sleep_for(150ms);
    const auto stoppedAt = std::chrono::steady_clock::now();
    watch.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - stoppedAt, 500ms);
  }
  EXPECT_TRUE(reports.gone.empty());
}

}  // namespace
}  // namespace hora
