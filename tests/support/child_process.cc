#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace hora::test_support {

namespace {
// Stands for a newline inside a reported value: lines end reports.
constexpr char kNewline = '\x1e';

void storeStatus(ChildExit& result, int status) {
  if (WIFEXITED(status)) {
    result.exited = true;
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
}
}  // namespace

void Reporter::report(const std::string& key, const std::string& value) {
  std::string line = key + " " + value;
  for (char& c : line)
    if (c == '\n') c = kNewline;
  line += '\n';
  const char* cursor = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, cursor, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nobody to tell
    cursor += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string ChildExit::describe() const {
  if (timedOut) return "did not exit in time (killed)";
  if (exited) return "exited with status " + std::to_string(code);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

ChildProcess::ChildProcess(std::function<int(Reporter&)> body, std::chrono::seconds lifetime) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::fflush(nullptr);  // or the child would print the parent's buffered output again
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(90);  // the parent died before prctl
    ::alarm(static_cast<unsigned>(lifetime.count()));
    Reporter reporter(fds[1]);
    int status = 91;
    try {
      status = body(reporter);
    } catch (const std::exception& error) {
      reporter.report("exception", error.what());
    } catch (...) {
      reporter.report("exception", "unknown");
    }
    // _exit: skip the parent's atexit handlers and static destructors.
    std::fflush(nullptr);
    ::_exit(status);
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (fd_ >= 0) ::close(fd_);
}

void ChildProcess::signal(int number) {
  if (!reaped_) ::kill(pid_, number);
}

bool ChildProcess::readSome(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return false;
  pollfd entry{fd_, POLLIN, 0};
  int ready = ::poll(&entry, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return true;
  char buffer[4096];
  ssize_t n = ::read(fd_, buffer, sizeof(buffer));
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) {
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  pending_.append(buffer, static_cast<std::size_t>(n));
  for (std::size_t end; (end = pending_.find('\n')) != std::string::npos;) {
    std::string line = pending_.substr(0, end);
    pending_.erase(0, end + 1);
    for (char& c : line)
      if (c == kNewline) c = '\n';
    std::size_t space = line.find(' ');
    if (space == std::string::npos) values_[line] = "";
    else values_[line.substr(0, space)] = line.substr(space + 1);
  }
  return true;
}

std::optional<std::string> ChildProcess::waitFor(const std::string& key,
                                                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto found = values_.find(key); found != values_.end()) return found->second;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (!readSome(left)) {
      if (auto found = values_.find(key); found != values_.end()) return found->second;
      return std::nullopt;
    }
  }
}

std::string ChildProcess::value(const std::string& key) {
  while (fd_ >= 0) {
    pollfd entry{fd_, POLLIN, 0};
    if (::poll(&entry, 1, 0) <= 0) break;
    if (!readSome(std::chrono::milliseconds(0))) break;
  }
  auto found = values_.find(key);
  return found == values_.end() ? std::string() : found->second;
}

std::optional<ChildExit> ChildProcess::pollExit() {
  if (reaped_) return exit_;
  value("");
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  reaped_ = true;
  value("");
  storeStatus(exit_, status);
  return exit_;
}

ChildExit ChildProcess::waitExit(std::chrono::milliseconds timeout) {
  ChildExit& result = exit_;
  if (reaped_) return result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      value("");  // keep what it reported before it was killed
      result.timedOut = true;
      return result;
    }
    readSome(std::chrono::milliseconds(20));
  }
  reaped_ = true;
  value("");
  storeStatus(result, status);
  return result;
}

void setEnvironment(const std::string& name, const std::string& value) {
  if (::setenv(name.c_str(), value.c_str(), 1) != 0) throw std::runtime_error("setenv failed for " + name);
}

}  // namespace hora::test_support
