#include "exit_status.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::launcher {
namespace {

using ::testing::HasSubstr;

// A child that runs `body`, then exits with 0.
template <typename Body>
pid_t start_child(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  return pid;
}

// The wait status of a real child that runs `body`.
template <typename Body>
int wait_status_of_child(Body body) {
  int status = 0;
  ::waitpid(start_child(body), &status, 0);
  return status;
}

// What waitid() says of an exited child, turned into a wait status, is
// what waitpid() gives for the same child.
template <typename Body>
void expect_waitid_reads_as_waitpid(Body body) {
  const pid_t pid = start_child(body);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(wait_status_of(info), status) << describe_wait_status(status);
}

TEST(ExitStatusTest, WaitidStatusesReadAsWaitpidOnes) {
  expect_waitid_reads_as_waitpid([] { ::_exit(0); });
  expect_waitid_reads_as_waitpid([] { ::_exit(3); });
  expect_waitid_reads_as_waitpid([] { ::_exit(255); });
  expect_waitid_reads_as_waitpid([] { ::raise(SIGKILL); });
  expect_waitid_reads_as_waitpid([] { ::raise(SIGTERM); });
}

TEST(ExitStatusTest, NormalExit) {
  int success = wait_status_of_child([] { ::_exit(0); });
  EXPECT_TRUE(is_success(success));
  EXPECT_EQ(exit_code_for(success), 0);

  int failure = wait_status_of_child([] { ::_exit(3); });
  EXPECT_FALSE(is_success(failure));
  EXPECT_EQ(exit_code_for(failure), 3);
  EXPECT_EQ(describe_wait_status(failure), "exited with status 3");
}

TEST(ExitStatusTest, KilledBySignalUsesShellConvention) {
  int killed = wait_status_of_child([] { ::raise(SIGKILL); });
  EXPECT_FALSE(is_success(killed));
  EXPECT_EQ(exit_code_for(killed), 128 + SIGKILL);
  EXPECT_THAT(describe_wait_status(killed), HasSubstr("was killed by signal 9 (Killed"));
}

TEST(ExitStatusTest, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(signal_name(SIGWINCH), "signal " + std::to_string(SIGWINCH));  // one hora-run never forwards
}

}  // namespace
}  // namespace hora::launcher
