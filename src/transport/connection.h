// The interface between the host executor and a transport: a one-directional
// byte stream to (SendConnection) or from (RecvConnection) one peer, driven
// without blocking.
//
// The executor posts buffers and calls progress() from its wait loop; a
// transport moves what it can and returns. Counters of posted and completed
// bytes let the executor know when a buffer may be reused (send) or read
// (recv). Every transport (tcp, shm; ib later) implements these.
//
// A transport whose buffer is memory the peer can read (shared memory) also
// lets the executor work in that buffer directly: a reduction then reads its
// operand from where the peer put it and writes its result where the next
// rank will read it, instead of copying through staging buffers.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/error.h"
#include "protocols/protocol.h"
#include "transport/op_stamp.h"
#include "transport/wake_line.h"

namespace hora::transport {

// Whether the receiving side may read the sender's memory directly
// (single-copy transfers); unknown until the receiver has said so.
enum class PeerMemoryAccess { Unknown, No, Yes };

// What both directions share: byte counters, progress, and what a stalled
// wait needs (something to poll, a liveness check, a name for errors).
class Connection {
 public:
  virtual ~Connection() = default;
  virtual std::uint64_t postedBytes() const = 0;
  virtual std::uint64_t completedBytes() const = 0;
  // Moves what it can now; true if any byte moved. Throws on peer failure.
  virtual bool progress() = 0;
  // What to poll() on while waiting (fd -1: nothing to poll, spin instead).
  virtual pollfd pollEntry() const = 0;
  // How long a waiter may sleep in poll() before progressing again: data
  // that arrives in shared memory wakes no file descriptor.
  virtual std::chrono::microseconds sleepSlice() const { return std::chrono::milliseconds(20); }
  // Throws a Remote error if the peer is gone (called while a wait stalls).
  virtual void checkAlive() {}
  // Where this end may sleep while it waits for the peer, which wakes it
  // there whenever it moves (wake_line.h); null where the peer wakes
  // nothing, and a waiter sleeps in poll() instead.
  virtual WakeLine* wakeLine() { return nullptr; }
  virtual const std::string& peerName() const = 0;
  // Nothing outstanding: a stalled wait need not watch this peer.
  virtual bool idle() const { return completedBytes() == postedBytes(); }
  // Pads the stream to a multiple of `alignment` (at most 64) bytes, so that
  // what follows lies aligned in the transport's buffer; the other end pads
  // at the same point. A no-op for transports without in-place access.
  virtual void alignStream(std::size_t /*alignment*/) {}
  // Both ends call this at the same point of the stream, where a message or
  // an operation begins:
  //  - the bytes posted from here until the next call travel by `protocol`
  //    where the transport has it (shared memory: LL or Simple,
  //    shm_connection.h). The planner picks it by the message's size, alike
  //    on every rank, so both ends agree without talking; transports with
  //    one way ignore it.
  //  - `stamp`, unless null, says the bytes from here on begin an operation
  //    (op_stamp.h): the sender's stamp goes with its first bytes of the
  //    operation; the receiver hands out none of them until the stamp that
  //    came matches this one (StampMismatch otherwise). The connection keeps
  //    a copy.
  // One call for both: it is made on every connection an operation uses,
  // on the path of the smallest calls.
  virtual void beginMessage(protocols::Protocol protocol, const OpStamp* stamp) = 0;
  // Stamps begun here that have not left yet (sender) or not been checked
  // yet (receiver). A plain load: the executor looks at every connection
  // at the end of every operation, and usually every stamp rode on data.
  std::size_t stampsOutstanding() const { return stampsOutstanding_; }
  // The peer's rank, for errors that blame it (hora::Error::failedRank);
  // set by the connector that made the connection.
  int peerRank() const { return peerRank_; }
  void setPeerRank(int rank) { peerRank_ = rank; }

 protected:
  std::size_t stampsOutstanding_ = 0;  // kept by the transport

 private:
  int peerRank_ = -1;
};

class SendConnection : public Connection {
 public:
  // Queues `bytes` from `data`. The memory must stay valid and unchanged
  // until completedBytes() reaches postedBytes() as of this call.
  virtual void post(const void* data, std::size_t bytes) = 0;

  // In-place sending. Once everything posted has been handed to the
  // transport, writable(max) is where the next bytes of the stream go (up to
  // `max` of them; empty while there is no room), and commitWritten(n) sends
  // the first n bytes written there (they count as posted at once).
  virtual bool sendsInPlace() const { return false; }
  virtual std::span<char> writable(std::size_t /*maxBytes*/) { return {}; }
  virtual void commitWritten(std::size_t /*bytes*/) {
    fail(ErrorKind::Internal, "this transport cannot send in place");
  }

  // Whether the copies this connection makes of posted buffers into memory
  // the receiver reads (a shared-memory FIFO) from now on bypass the cache
  // (core::Plan::streamingFifo). A hint, set on every operation's links:
  // a plain store, which transports that copy nothing ignore.
  void streamCopies(bool streaming) { streamCopies_ = streaming; }
  bool streamsCopies() const { return streamCopies_; }

  // Single copy: whether the receiver can read this process's memory
  // (RecvConnection::readPeerMemory), and how many bytes of the stream it
  // has taken in, so that a sender knows when a buffer it only described
  // has been read.
  virtual PeerMemoryAccess peerMemoryAccess() { return PeerMemoryAccess::No; }
  virtual std::uint64_t acknowledgedBytes() const { return completedBytes(); }

  // The program deregistered buffers: registrations of them this transport
  // made with a device are released now (ByteStream::releaseDeregistered).
  // Called only while no operation uses the connection.
  virtual void releaseDeregistered() {}

  // The stamp of beginMessage leaves with the operation's first bytes.
  // An operation that sends nothing more here (or that is about to wait for
  // a peer before it sends) calls flushStamp: the stamp then leaves alone
  // if no bytes of the operation are on their way to carry it.
  virtual void flushStamp() = 0;
  // A stamp has not left yet (progress() sends it).
  bool stampPending() const { return stampsOutstanding_ != 0; }

 private:
  bool streamCopies_ = false;
};

class RecvConnection : public Connection {
 public:
  // Queues a receive of exactly `bytes` into `data`, after earlier ones.
  virtual void post(void* data, std::size_t bytes) = 0;

  // In-place receiving. postInPlace(n) queues a receive of n bytes that the
  // caller reads in the transport's buffer: once the receives posted before
  // it have completed, readable() shows the bytes of it that have arrived,
  // and consumeRead(k) releases the first k of them (completing k bytes).
  virtual bool receivesInPlace() const { return false; }
  virtual void postInPlace(std::size_t /*bytes*/) {
    fail(ErrorKind::Internal, "this transport cannot receive in place");
  }
  virtual std::span<const char> readable() { return {}; }
  virtual void consumeRead(std::size_t /*bytes*/) {
    fail(ErrorKind::Internal, "this transport cannot receive in place");
  }

  // Single copy: copies `bytes` at `address` in the sender's memory.
  virtual bool readsPeerMemory() const { return false; }
  virtual void readPeerMemory(void* /*dst*/, std::uint64_t /*address*/, std::size_t /*bytes*/) {
    fail(ErrorKind::Internal, "this transport cannot read the peer's memory");
  }

  // Checks what it can of the stamps expected so far (without waiting):
  // true once every one has come and matched. Throws StampMismatch. An
  // operation that receives no bytes here waits on this to be checked all
  // the same.
  virtual bool stampChecked() = 0;
};

}  // namespace hora::transport
