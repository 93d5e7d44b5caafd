// processGone: a running process, a zombie, and a reaped one;
// processStopped: a child stopped and continued.
#include "base/process_state.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace hora {
namespace {

TEST(ProcessState, ThisProcessRuns) { EXPECT_FALSE(processGone(::getpid())); }

TEST(ProcessState, AChildIsGoneOnceItExitsEvenBeforeItIsReaped) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_FALSE(processGone(child));
  ::kill(child, SIGKILL);
  // A zombie until waited for: kill(pid, 0) still succeeds on it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = processGone(child);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(::kill(child, 0), 0) << "the child should still be a zombie here";
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(processGone(child));
}

TEST(ProcessState, NonsensePidsAreNotReportedGone) {
  EXPECT_FALSE(processGone(0));
  EXPECT_FALSE(processGone(-1));
  EXPECT_FALSE(processStopped(0));
  EXPECT_FALSE(processStopped(-1));
}

TEST(ProcessState, AStoppedChildIsStoppedUntilContinued) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) ::pause();
  }
  EXPECT_FALSE(processStopped(child));
  ::kill(child, SIGSTOP);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_TRUE(processStopped(child));
  EXPECT_FALSE(processGone(child));
  ::kill(child, SIGCONT);
  ASSERT_EQ(::waitpid(child, &status, WCONTINUED), child);
  EXPECT_FALSE(processStopped(child));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace hora
