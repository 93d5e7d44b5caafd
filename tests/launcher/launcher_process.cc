#include "launcher_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace hora::launcher::testing {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// In the child, before exec: only lowers the soft limit, which any process
// may do, so the hard limit (and root's exemption) stay as they were.
void lower_soft_process_limit(unsigned long soft_limit) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NPROC, &limit) != 0) ::_exit(125);
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? soft_limit : std::min<rlim_t>(soft_limit, limit.rlim_max);
  if (::setrlimit(RLIMIT_NPROC, &limit) != 0) ::_exit(125);
}

}  // namespace

std::string hora_run_path() {
  const char* path = std::getenv("HORA_RUN");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("HORA_RUN is not set: it must name the hora-run binary to test");
  }
  return path;
}

int LauncherResult::exit_code() const { return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }
std::vector<std::string> LauncherResult::out_lines() const { return split_lines(out); }
std::vector<std::string> LauncherResult::err_lines() const { return split_lines(err); }

LauncherProcess::LauncherProcess(const std::vector<std::string>& arguments,
                                 std::optional<unsigned long> soft_process_limit) {
  std::string program = hora_run_path();
  std::vector<std::string> argv_strings{program};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& text : argv_strings) argv.push_back(text.data());
  argv.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  started_ = std::chrono::steady_clock::now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int null_input = ::open("/dev/null", O_RDONLY);
    ::dup2(null_input, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    if (soft_process_limit) lower_soft_process_limit(*soft_process_limit);
    ::execv(argv[0], argv.data());
    ::_exit(126);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

LauncherProcess::~LauncherProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

void LauncherProcess::try_reap() {
  if (reaped_) return;
  if (::waitpid(pid_, &result_.wait_status, WNOHANG) == pid_) {
    reaped_ = true;
    result_.elapsed = std::chrono::steady_clock::now() - started_;
  }
}

void LauncherProcess::pump(std::chrono::milliseconds wait) {
  std::vector<pollfd> watched;
  if (out_fd_ >= 0 && read_stdout_) watched.push_back({out_fd_, POLLIN, 0});
  if (err_fd_ >= 0) watched.push_back({err_fd_, POLLIN, 0});
  if (watched.empty()) {
    std::this_thread::sleep_for(wait);
    return;
  }
  if (::poll(watched.data(), watched.size(), static_cast<int>(wait.count())) <= 0) return;
  for (const pollfd& entry : watched) {
    if (entry.revents == 0) continue;
    char buffer[65536];
    ssize_t count = ::read(entry.fd, buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR) continue;
    std::string& sink = entry.fd == out_fd_ ? result_.out : result_.err;
    if (count > 0) {
      sink.append(buffer, static_cast<std::size_t>(count));
    } else {
      int& fd = entry.fd == out_fd_ ? out_fd_ : err_fd_;
      ::close(fd);
      fd = -1;
    }
  }
}

bool LauncherProcess::wait_for_stdout(const std::string& text, int count, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (count_occurrences(result_.out, text) < static_cast<std::size_t>(count)) {
    try_reap();
    if (reaped_ && out_fd_ < 0) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pump(std::chrono::milliseconds(20));
  }
  return true;
}

LauncherResult LauncherProcess::finish(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (true) {
    try_reap();
    if (reaped_ && (out_fd_ < 0 || !read_stdout_) && err_fd_ < 0) break;
    auto now = std::chrono::steady_clock::now();
    // Output pipes may outlive hora-run when its ranks inherited them;
    // read for a moment longer, then stop.
    if (reaped_ && !drain_until) drain_until = now + std::chrono::milliseconds(300);
    if (drain_until && now >= *drain_until) break;
    if (now >= deadline) {
      result_.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &result_.wait_status, 0);
      reaped_ = true;
      result_.elapsed = std::chrono::steady_clock::now() - started_;
      break;
    }
    pump(std::chrono::milliseconds(20));
  }
  return result_;
}

LauncherResult run_launcher(const std::vector<std::string>& arguments) {
  LauncherProcess launcher(arguments);
  return launcher.finish(std::chrono::seconds(30));
}

LauncherResult run_launcher_with_process_limit(const std::vector<std::string>& arguments,
                                               unsigned long soft_process_limit) {
  LauncherProcess launcher(arguments, soft_process_limit);
  return launcher.finish(std::chrono::seconds(30));
}

}  // namespace hora::launcher::testing
