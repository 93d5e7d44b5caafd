// The interface between the host executor and a transport: a one-directional
// byte stream to (SendConnection) or from (RecvConnection) one peer, driven
// without blocking.
//
// The executor posts buffers and calls progress() from its wait loop; a
// transport moves what it can and returns. Counters of posted and completed
// bytes let the executor know when a buffer may be reused (send) or read
// (recv). Every transport (tcp now; shm, ib later) implements these.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hora::transport {

class SendConnection {
 public:
  virtual ~SendConnection() = default;
  // Queues `bytes` from `data`. The memory must stay valid and unchanged
  // until completedBytes() reaches postedBytes() as of this call.
  virtual void post(const void* data, std::size_t bytes) = 0;
  virtual std::uint64_t postedBytes() const = 0;
  virtual std::uint64_t completedBytes() const = 0;
  // Moves what it can now; true if any byte moved. Throws on peer failure.
  virtual bool progress() = 0;
  // What to poll() on while waiting (fd -1: nothing to poll, spin instead).
  virtual pollfd pollEntry() const = 0;
  // How long a waiter may sleep in poll() before progressing again: data
  // that arrives in shared memory wakes no file descriptor.
  virtual int sleepSliceMs() const { return 20; }
  // Throws a Remote error if the peer is gone (called while a wait stalls).
  virtual void checkAlive() {}
  virtual const std::string& peerName() const = 0;
};

class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  // Queues a receive of exactly `bytes` into `data`, after earlier ones.
  virtual void post(void* data, std::size_t bytes) = 0;
  virtual std::uint64_t postedBytes() const = 0;
  virtual std::uint64_t completedBytes() const = 0;
  virtual bool progress() = 0;
  virtual pollfd pollEntry() const = 0;
  // How long a waiter may sleep in poll() before progressing again: data
  // that arrives in shared memory wakes no file descriptor.
  virtual int sleepSliceMs() const { return 20; }
  // Throws a Remote error if the peer is gone (called while a wait stalls).
  virtual void checkAlive() {}
  virtual const std::string& peerName() const = 0;
};

}  // namespace hora::transport
