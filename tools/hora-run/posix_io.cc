#include "posix_io.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hora::launcher {

void throw_errno(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A descriptor the launcher inherited non-blocking (a pipe to a
        // slow reader): wait until it takes more, never drop output.
        pollfd entry{fd, POLLOUT, 0};
        if (::poll(&entry, 1, -1) < 0 && errno != EINTR) return false;
        continue;
      }
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Pipe make_pipe(const std::string& purpose) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw_errno("cannot create a pipe for " + purpose);
  return Pipe{UniqueFd(ends[0]), UniqueFd(ends[1])};
}

}  // namespace hora::launcher
