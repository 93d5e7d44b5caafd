// Host memory that the other ranks of this host can map: what ncclMemAlloc
// returns. Each allocation is its own anonymous memfd, kept open by the
// owner while the allocation lives, so that a peer process can open it
// through /proc/<pid>/fd/<fd> and map the same pages (as the shared-memory
// transport maps its FIFOs). Collectives on buffers in such memory, once
// registered as windows (ncclCommWindowRegister), read and write the peers'
// buffers directly instead of copying through FIFOs.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace hora::transport {

// Where a byte range of shareable memory lives: enough for a peer on the
// same host to find, check and map it.
struct SharedRange {
  pid_t pid = 0;               // the owner
  int fd = -1;                 // the allocation's memfd, open in the owner
  std::uint64_t device = 0;    // the memfd's identity (st_dev, st_ino): a
  std::uint64_t inode = 0;     //   peer checks it opened the right file
  std::size_t fileOffset = 0;  // of the range's first byte in the memfd
  std::size_t bytes = 0;
};

// A new zero-filled allocation of at least `bytes` (rounded up to pages),
// page-aligned. Throws InvalidArgument for 0 bytes, System when the memory
// cannot be had.
void* allocateShared(std::size_t bytes);
// Frees an allocation of allocateShared; a peer's mapping keeps its pages
// until the peer unmaps them. Throws InvalidArgument (naming the pointer)
// for anything else.
void freeShared(void* ptr);
// The allocation holding all of [ptr, ptr + bytes), if any.
std::optional<SharedRange> findShared(const void* ptr, std::size_t bytes);

// A peer's range, mapped read-write into this process until destroyed.
class PeerMapping {
 public:
  // Throws System naming the peer's file when it cannot be opened, is not
  // the file `range` names (another pid namespace), or cannot be mapped.
  static PeerMapping open(const SharedRange& range);

  PeerMapping() = default;
  ~PeerMapping();
  PeerMapping(PeerMapping&& other) noexcept;
  PeerMapping& operator=(PeerMapping&& other) noexcept;
  PeerMapping(const PeerMapping&) = delete;
  PeerMapping& operator=(const PeerMapping&) = delete;

  // The range's first byte.
  void* data() const { return static_cast<char*>(base_) + lead_; }

 private:
  void unmap();

  void* base_ = nullptr;  // page-aligned start of the mapping
  std::size_t mappedBytes_ = 0;
  std::size_t lead_ = 0;  // from base_ to the range's first byte
};

}  // namespace hora::transport
