// The seam between hora's RDMA protocol (credit_stream.h) and a device: one
// reliable-connected queue pair with its memory registrations and
// completions. Backends: libibverbs (InfiniBand, RoCE), libfabric, and a
// fake device for tests (tests/transport/rdma/). The protocol needs only
// what every one of them has: one-sided writes into registered memory, a
// write with a 32-bit immediate that consumes a receive posted by the peer,
// completions polled without blocking, and a file descriptor to sleep on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hora::transport::rdma {

// What a registration lets the NICs do with the memory. Least privilege: a
// write's source (staging slots, the grants a receiver sends, a program's
// registered buffer) is only read by this side's NIC, so no peer can write
// into it; only the memory peers write into (a receiver's slots, a sender's
// credit ring) is open to remote writes.
enum class Access : std::uint8_t {
  LocalRead,    // the source of this side's writes
  RemoteWrite,  // written by the peer's writes (and by this side)
};

// Memory registered for RDMA: the local key for work requests that read it,
// the remote key a peer writes into it with, and the address a peer names
// its first byte by. Verbs names registered memory by virtual address;
// libfabric providers may use offsets from the region's start instead
// (without FI_MR_VIRT_ADDR), so the protocol never assumes either.
// Keys are 64 bits wide because libfabric's are (verbs' fit in 32).
struct Region {
  char* base = nullptr;
  std::size_t bytes = 0;
  std::uint64_t localKey = 0;
  std::uint64_t remoteKey = 0;
  std::uint64_t remoteAddress = 0;  // of base, as a peer writes to it
  Access access = Access::LocalRead;

  // Where a peer writes to reach base + offset.
  std::uint64_t remoteAt(std::size_t offset) const { return remoteAddress + offset; }
};

// Where a peer may write: an address in its registered memory and its key.
struct RemoteMemory {
  std::uint64_t address = 0;
  std::uint64_t key = 0;
};

// How a work request ended, with the cases verbs distinguishes that the
// protocol must tell apart (ibv_wc_status).
enum class Status : std::uint8_t {
  Success,
  RemoteAccessError,   // bad key, out of bounds, not Access::RemoteWrite (IBV_WC_REM_ACCESS_ERR)
  ReceiverNotReady,    // a write with immediate found no posted receive (IBV_WC_RNR_RETRY_EXC_ERR)
  Flushed,             // the queue pair went into error before it ran (IBV_WC_WR_FLUSH_ERR)
  RetryExceeded,       // the peer stopped answering (IBV_WC_RETRY_EXC_ERR)
  LocalError,          // anything else on this side
};
const char* statusName(Status status);

enum class Operation : std::uint8_t { Write, WriteWithImmediate, Receive };

struct Completion {
  std::uint64_t id = 0;  // the work request's
  Operation operation = Operation::Write;
  Status status = Status::Success;
  std::uint32_t immediate = 0;  // Receive completions of a write with immediate
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;

  // How many work requests may be outstanding on the send queue (unsignaled
  // ones count until a later signaled one completes) and the receive queue.
  virtual std::size_t sendQueueDepth() const = 0;
  virtual std::size_t receiveQueueDepth() const = 0;

  // Registers [base, base + bytes) for `access`. `owner` names this
  // lifetime of the memory (memory_owner.h): queue pairs of one device that
  // register the same memory of the same owner for the same access may
  // share one registration (registration_cache.h); 0 shares with none.
  virtual Region registerMemory(void* base, std::size_t bytes, std::uint64_t owner, Access access) = 0;
  // Ends a registration of registerMemory before the queue pair closes
  // (which ends them all). No request in flight may still use it.
  virtual void deregisterMemory(const Region& region) = 0;

  // Writes `bytes` at `offset` in `from` to the peer's memory `to`.
  // Unsignaled writes complete silently, with the next signaled request.
  virtual void postWrite(const Region& from, std::size_t offset, std::size_t bytes, RemoteMemory to,
                         std::uint64_t id, bool signaled) = 0;
  // A write of no bytes that consumes the peer's oldest posted receive,
  // which completes there with `immediate`. Always signaled. On a reliable
  // connection it lands after every write posted before it.
  virtual void postWriteWithImmediate(std::uint32_t immediate, std::uint64_t id) = 0;
  virtual void postReceive(std::uint64_t id) = 0;

  // Up to `max` completions, oldest first; never blocks.
  virtual std::size_t poll(Completion* out, std::size_t max) = 0;
  // Readable when a completion may be waiting (after arm()); -1 if the
  // device has none, and the caller polls.
  virtual int eventFd() const = 0;
  // Asks for the fd to become readable at the next completion; false when
  // one may be waiting already (the caller must poll, not sleep).
  virtual bool arm() { return true; }

  // What the peer needs to connect to this queue pair, sent over the
  // connection's TCP lifeline; then connect() with the peer's.
  virtual std::vector<char> address() const = 0;
  virtual void connect(const std::vector<char>& peerAddress) = 0;
};

}  // namespace hora::transport::rdma
