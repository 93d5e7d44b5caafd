// Memory shared between two ranks of one host, without files: the owner
// makes an anonymous memfd, the peer opens it through /proc/<pid>/fd/<fd>
// while the owner keeps it open, and both map it. Nothing is ever created
// under /dev/shm, so a crash cannot leak a segment: the memory goes away
// with the last mapping.
//
// Each side maps the segment once, wherever the kernel puts it: what lives
// in it (shm_layout.h) is found by offsets, never by addresses.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "transport/shm/peer_file.h"

namespace hora::transport {

class ShmSegment {
 public:
  // Page size granularity of the segment's size.
  static std::size_t pageBytes();

  // A new zero-filled segment of `bytes` owned by this process; fd() stays
  // open until closeDescriptor(), so that the peer can open it meanwhile.
  // `bytes` must be a nonzero multiple of pageBytes().
  static ShmSegment create(std::size_t bytes);
  // Maps the segment that process `pid` holds open as descriptor `fd`,
  // after checking it is the file of that `identity` (the owner's
  // identity(); see peer_file.h). Throws System naming the /proc path when
  // it cannot be opened, is another file, or cannot be mapped; `hint` ends
  // the message (what to do instead, as "; set ..."; may be empty).
  static ShmSegment openPeer(pid_t pid, int fd, const FileIdentity& identity, std::size_t bytes,
                             const char* hint);

  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // The segment's first byte (page-aligned).
  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  int fd() const { return fd_; }
  // The memfd's identity, for the peer to check (only in the owner's
  // segment: a peer's is empty).
  const FileIdentity& identity() const { return identity_; }
  void closeDescriptor();

 private:
  void map(std::size_t bytes, const char* what);
  void unmap();

  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  FileIdentity identity_;
};

}  // namespace hora::transport
