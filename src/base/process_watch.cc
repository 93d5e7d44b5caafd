#include "base/process_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/error.h"
#include "base/log.h"
#include "base/process_state.h"

namespace hora {

namespace {
int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}
}  // namespace

ProcessWatch::ProcessWatch(std::vector<Watched> processes, OnGone onGone, bool pidfds)
    : onGone_(std::move(onGone)) {
  auto closeAll = [&] {
    for (int fd : pidfds_) ::close(fd);
    if (stopFd_ >= 0) ::close(stopFd_);
  };
  for (const Watched& process : processes) {
    const int fd = pidfds ? openPidfd(process.pid) : -1;
    if (fd >= 0) {
      byPidfd_.push_back(process);
      pidfds_.push_back(fd);
    } else {
      polled_.push_back(process);
    }
  }
  stopFd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stopFd_ < 0) {
    const int error = errno;
    closeAll();
    fail(ErrorKind::System, "creating an eventfd to stop the process watch: ", errnoText(error));
  }
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    closeAll();
    throw;
  }
}

ProcessWatch::~ProcessWatch() {
  const std::uint64_t one = 1;
  (void)!::write(stopFd_, &one, sizeof(one));
  thread_.join();
  ::close(stopFd_);
  for (int fd : pidfds_) ::close(fd);
}

void ProcessWatch::run() {
  // entries[0] is the stop signal; entries[1 + i] watches byPidfd_[i], and
  // stops doing so (fd -1) once that process is reported.
  std::vector<pollfd> entries;
  entries.push_back({stopFd_, POLLIN, 0});
  for (int fd : pidfds_) entries.push_back({fd, POLLIN, 0});
  while (true) {
    const int timeout = polled_.empty() ? -1 : static_cast<int>(kFallbackPoll.count());
    const int ready = ::poll(entries.data(), entries.size(), timeout);
    if (ready < 0 && errno != EINTR) {
      HORA_LOG(Warn, "the watch of peer processes stopped: poll failed: ", errnoText(errno));
      return;
    }
    if (entries[0].revents != 0) return;  // stopped
    for (std::size_t i = 1; i < entries.size(); ++i)
      if (entries[i].fd >= 0 && entries[i].revents != 0) {
        entries[i].fd = -1;  // poll() skips negative descriptors
        onGone_(byPidfd_[i - 1]);
      }
    for (auto process = polled_.begin(); process != polled_.end();) {
      if (!processGone(process->pid)) {
        ++process;
        continue;
      }
      onGone_(*process);
      process = polled_.erase(process);
    }
  }
}

}  // namespace hora
