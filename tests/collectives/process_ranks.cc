// The Processes mode of runRanks(): a forked child per rank.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <gtest/gtest.h>

#include "run_modes.h"
#include "support/free_port.h"

namespace hora_coll_test {

namespace {

// Collects the text of every gtest failure in a child, for its report.
class FailureCollector : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    text_ += std::string(result.file_name() != nullptr ? result.file_name() : "?") + ":" +
             std::to_string(result.line_number()) + ": " + result.message() + "\n";
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  std::mutex mutex_;
  int count_ = 0;
  std::string text_;
};

void writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing to tell
    done += static_cast<std::size_t>(n);
  }
}

// The child's whole life; returns its exit code (0 passed, 1 failed).
int runChild(const RunOptions& options, const ProgramFactory& factory, int rank, int port,
             int reportFd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test program
  if (::getppid() != parent) return 3;
  ::alarm(static_cast<unsigned>(options.deadline.count()) + 10);  // backstop to the parent's kill
  for (const auto& [name, value] : rankEnvironment(options)) ::setenv(name.c_str(), value.c_str(), 1);
  const std::string commId = "127.0.0.1:" + std::to_string(port);
  ::setenv("HORA_COMM_ID", commId.c_str(), 1);

  auto* collector = new FailureCollector;  // owned by gtest from here on
  ::testing::UnitTest::GetInstance()->listeners().Append(collector);
  RankContext context;
  context.rank = rank;
  context.nranks = options.nranks;
  {
    SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(options.nranks) +
                 " (process " + std::to_string(::getpid()) + ")");
    try {
      ncclUniqueId id;
      ncclResult_t result = ncclGetUniqueId(&id);
      if (result != ncclSuccess) {
        ADD_FAILURE() << describeFailure("ncclGetUniqueId", result, nullptr);
      } else if ((result = ncclCommInitRank(&context.comm, options.nranks, id, rank)) !=
                 ncclSuccess) {
        ADD_FAILURE() << describeFailure("ncclCommInitRank", result, nullptr);
      } else {
        std::unique_ptr<RankProgram> program = factory(rank, options.nranks);
        if (runProgramSteps(*program, context)) {
          result = ncclCommDestroy(context.comm);
          if (result != ncclSuccess)
            ADD_FAILURE() << describeFailure("ncclCommDestroy", result, nullptr);
        }
      }
    } catch (const std::exception& error) {
      ADD_FAILURE() << "exception: " << error.what();
    }
  }
  writeAll(reportFd, context.agreement + "\n" + collector->text());
  ::close(reportFd);
  std::fflush(nullptr);
  return collector->count() == 0 ? 0 : 1;
}

struct Child {
  pid_t pid = -1;
  int fd = -1;  // the parent's end of the report pipe; -1 at end of file
  std::string report;
  bool reaped = false;
  int status = 0;
};

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  return "ended with status " + std::to_string(status);
}

void readAvailable(Child& child) {
  char buffer[4096];
  ssize_t n = ::read(child.fd, buffer, sizeof(buffer));
  if (n > 0) {
    child.report.append(buffer, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    ::close(child.fd);
    child.fd = -1;
  }
}

}  // namespace

RunOutcome runAsProcesses(const RunOptions& options, const ProgramFactory& factory) {
  const int n = options.nranks;
  RunOutcome outcome;
  outcome.ranks.resize(n);
  const int port = hora::test_support::freeLoopbackPort();
  std::vector<Child> children(n);
  std::vector<int> writeEnds(n, -1);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe() failed");
    children[r].fd = fds[0];
    writeEnds[r] = fds[1];
  }
  std::fflush(nullptr);  // or the children would print the parent's buffered output again
  const pid_t parent = ::getpid();
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork() failed");
    if (pid == 0) {
      // Keep only this child's write end, so each pipe reaches end of file
      // exactly when its own child exits.
      for (int k = 0; k < n; ++k) {
        if (children[k].fd >= 0) ::close(children[k].fd);
        if (k != r) ::close(writeEnds[k]);
      }
      int code = 2;
      try {
        code = runChild(options, factory, r, port, writeEnds[r], parent);
      } catch (...) {
      }
      std::fflush(nullptr);
      ::_exit(code);  // no atexit handlers, no gtest summary from a child
    }
    children[r].pid = pid;
  }
  for (int fd : writeEnds) ::close(fd);

  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  auto pending = [&] {
    for (const auto& child : children)
      if (child.fd >= 0 || !child.reaped) return true;
    return false;
  };
  while (pending() && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> polls;
    std::vector<Child*> polled;
    for (auto& child : children)
      if (child.fd >= 0) {
        polls.push_back({child.fd, POLLIN, 0});
        polled.push_back(&child);
      }
    if (!polls.empty()) {
      ::poll(polls.data(), polls.size(), 20);
      for (std::size_t i = 0; i < polls.size(); ++i)
        if (polls[i].revents != 0) readAvailable(*polled[i]);
    } else {
      ::usleep(2000);
    }
    for (auto& child : children)
      if (!child.reaped && ::waitpid(child.pid, &child.status, WNOHANG) == child.pid)
        child.reaped = true;
  }

  for (int r = 0; r < n; ++r) {
    Child& child = children[r];
    RankOutcome& rank = outcome.ranks[r];
    bool timedOut = false;
    if (!child.reaped) {
      ::kill(child.pid, SIGKILL);
      ::waitpid(child.pid, &child.status, 0);
      child.reaped = true;
      timedOut = true;
    }
    if (child.fd >= 0) {
      ::close(child.fd);
      child.fd = -1;
    }
    // The report: the agreement line, then failure text.
    std::size_t newline = child.report.find('\n');
    if (newline != std::string::npos) {
      rank.agreement = child.report.substr(0, newline);
      rank.report = child.report.substr(newline + 1);
    }
    const bool passed = !timedOut && WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0;
    rank.completed = !timedOut && WIFEXITED(child.status);
    rank.failed = !passed;
    if (timedOut)
      rank.report += "still running after " + std::to_string(options.deadline.count()) +
                     " s; killed\n";
    else if (!passed)
      rank.report += "process " + std::to_string(child.pid) + " " + describeStatus(child.status) +
                     (newline == std::string::npos ? " before reporting" : "") + "\n";
  }
  return outcome;
}

}  // namespace hora_coll_test
