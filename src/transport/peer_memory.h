// Memory other ranks can map, behind one interface: what ncclMemAlloc
// returns, and how windows (ncclCommWindowRegister) name a rank's buffer to
// its peers and map theirs. Host shared memory implements it today
// (shm/shared_memory.h); CUDA IPC will implement it for device memory, and
// the core will not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace hora::transport {

// An exported range as its peers receive it: plain bytes, the same size for
// every kind, so it can be all-gathered over the bootstrap.
struct PeerMemoryHandle {
  std::uint8_t bytes[56];
};

// A peer's range, mapped into this process while the object lives.
class PeerMemoryMapping {
 public:
  virtual ~PeerMemoryMapping() = default;
  virtual void* data() const = 0;  // the range's first byte
};

class PeerMemory {
 public:
  virtual ~PeerMemory() = default;
  virtual const char* name() const = 0;
  // A new zero-filled allocation of at least `bytes`. Throws InvalidArgument
  // for 0 bytes, System when the memory cannot be had.
  virtual void* allocate(std::size_t bytes) = 0;
  // Frees an allocation of allocate(); throws InvalidArgument (naming the
  // pointer) for anything else.
  virtual void free(void* ptr) = 0;
  // A handle for [ptr, ptr + bytes) if an allocation of this memory holds
  // all of it.
  virtual std::optional<PeerMemoryHandle> exportRange(const void* ptr, std::size_t bytes) const = 0;
  // Maps a range a peer on this host exported. Throws System naming what
  // failed when it cannot be mapped.
  virtual std::unique_ptr<PeerMemoryMapping> import(const PeerMemoryHandle& handle) const = 0;
};

// Host memory shared between the processes of one host (memfd).
PeerMemory& hostPeerMemory();

}  // namespace hora::transport
