// Small POSIX helpers shared by the launcher's parts: a file descriptor that
// closes itself, complete writes, and errors that carry errno's text.
#pragma once

#include <string>
#include <string_view>

namespace hora::launcher {

// Throws std::runtime_error("<what>: <strerror(errno)>").
[[noreturn]] void throw_errno(const std::string& what);

// Writes all of `data`, retrying after signals and short writes. Returns false
// if the descriptor refuses (e.g. EPIPE when the reader went away).
bool write_all(int fd, std::string_view data);

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A pipe whose both ends are close-on-exec, so no rank inherits another
// rank's pipes; the child end is dup2()'d onto stdout/stderr, which clears
// the flag on the copy only.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Pipe make_pipe(const std::string& purpose);

}  // namespace hora::launcher
