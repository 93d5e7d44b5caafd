// Memory shared between two ranks of one host, without files: the owner
// makes an anonymous memfd, the peer opens it through /proc/<pid>/fd/<fd>
// while the owner keeps it open, and both map it. Nothing is ever created
// under /dev/shm, so a crash cannot leak a segment: the memory goes away
// with the last mapping.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace hora::transport {

class ShmSegment {
 public:
  // A new zero-filled segment owned by this process; fd() stays open until
  // closeDescriptor(), so that the peer can open it meanwhile.
  static ShmSegment create(std::size_t bytes);
  // Maps the segment that process `pid` holds open as descriptor `fd`.
  static ShmSegment openPeer(pid_t pid, int fd, std::size_t bytes);

  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  int fd() const { return fd_; }
  void closeDescriptor();

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace hora::transport
