// The primitives of the schedules in algorithms/ (primitives.h states the
// contract) for host memory, over the transports' connections to the peers
// each call names.
//
// Each primitive works in slices of at most `sliceBytes`: a slice is
// received into a small staging buffer that stays in cache, reduced at once
// with the local input, and passed on while the next slice is arriving.
// Sends are queued, not awaited: a slice's buffer is reused only once the
// transport reports it sent. finish() waits for all sends, so when a
// collective returns no buffer of the caller's is referenced any more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/progress.h"
#include "kernels/reduce_host.h"
#include "transport/connector.h"

namespace hora::core {

// Cache-sized staging slots, owned by the executor and reused by every
// collective.
class StagingPool {
 public:
  StagingPool(std::size_t slotBytes, int slots);
  std::size_t slotBytes() const { return slotBytes_; }
  int slots() const { return static_cast<int>(marks_.size()); }
  char* slot(int index) { return memory_.data() + static_cast<std::size_t>(index) * slotBytes_; }
  // The connection the slot's last content went to and the send position
  // after which it has left (null: free).
  transport::SendConnection*& sendTo(int index) { return targets_[index]; }
  std::uint64_t& sendMark(int index) { return marks_[index]; }
  // `bytes` of scratch for a fan-in (recvReduceCopyAll), kept from one
  // operation to the next: a small all-reduce allocates nothing.
  char* fanIn(std::size_t bytes) {
    if (fanIn_.size() < bytes) fanIn_.resize(bytes);
    return fanIn_.data();
  }

 private:
  std::size_t slotBytes_;
  std::vector<char> memory_;
  std::vector<char> fanIn_;
  std::vector<std::uint64_t> marks_;
  std::vector<transport::SendConnection*> targets_;
};

// A connection to or from one peer as one operation uses it: resolved,
// registered with the progress engine and aligned on first use.
struct OutLink {
  transport::SendConnection* connection = nullptr;
  bool describe = false;  // single copy: send descriptions of our buffers
};
struct InLink {
  transport::RecvConnection* connection = nullptr;
  bool copyDescribed = false;  // single copy: read the peer's buffers
};

// Per-peer link state, sized once per communicator and reset per operation.
struct HostLinks {
  explicit HostLinks(int nranks) : out(nranks), in(nranks) {}
  void reset() {
    for (auto& link : out) link = {};
    for (auto& link : in) link = {};
  }
  std::vector<OutLink> out;
  std::vector<InLink> in;
};

class HostPrimitives {
 public:
  // How an operation's primitives use their connections.
  struct Options {
    // The output is large; copies into it bypass the cache
    // (kernels/copy_host.h).
    bool streamingStores = false;
    // What goes into a FIFO bypasses the cache (Plan::streamingFifo):
    // copies and reductions into the next rank's FIFO, and the copies the
    // transport makes of posted buffers (SendConnection::streamCopies).
    bool streamingFifo = false;
    // A collective that only moves data (all-gather, broadcast) may
    // describe its buffers to a peer instead of sending their bytes, where
    // that peer can read this process's memory: it then copies them once,
    // straight from buffer to buffer.
    bool singleCopy = false;
    // Pad every connection's stream to 64 bytes at its first use, so that
    // data reduced in place in a FIFO lies aligned. Schedules that reduce
    // only from their own scratch (direct) skip the padding, a copy per
    // small message; both ends of a connection run the same plan, so they
    // agree.
    bool alignStreams = true;
    // The plan's protocol, named to each connection at its first use
    // (Connection::beginMessage): both ends run the same plan, so they agree.
    protocols::Protocol protocol = protocols::Protocol::Simple;
    // The operation's stamp (core/agreement.h), given to each connection at
    // its first use; null: the operation is not checked.
    const transport::OpStamp* stamp = nullptr;
  };

  HostPrimitives(ProgressEngine& engine, transport::Connector& connector, HostLinks& links,
                 const void* in, void* out, const kernels::ReduceSpec& spec, StagingPool& staging,
                 const Options& options);

  void send(int to, std::size_t inOffset, std::size_t count);
  void recv(int from, std::size_t outOffset, std::size_t count);
  void recvReduceSend(int from, int to, std::size_t inOffset, std::size_t count);
  void recvReduceCopy(int from, std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvReduceCopySend(int from, int to, std::size_t inOffset, std::size_t outOffset,
                          std::size_t count);
  void recvCopySend(int from, int to, std::size_t outOffset, std::size_t count);
  void copySend(int to, std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvReduceCopyAll(const int* order, int nranks, int self, std::size_t inOffset,
                         std::size_t outOffset, std::size_t count);

  // Uses the connection to `to` and the one from `from` (-1: none) in this
  // operation now, even if nothing moves on them, so that their stamps are
  // exchanged (a message's, whatever its size).
  void attachLinks(int to, int from);
  // A collective's stamps also go to the next rank of the ring and come from
  // the previous one, whether or not the schedule moves data there, so that
  // every rank checks one (also a broadcast's root, or every rank of a
  // zero-count call). Those links are used when the schedule uses them
  // anyway, or else both before this rank first waits for data (the stamp
  // to `next` leaves, the one from `prev` is checked while it waits), or,
  // for a rank that never waits, at the end.
  void stampRing(int next, int prev) {
    ringNext_ = next;
    ringPrev_ = prev;
    stampsToFlush_ = true;
  }

  // Waits until every queued send has left (and, for single copies, has
  // been read by its receiver), and every stamp has left or been checked.
  void finish();

 private:
  const char* inAt(std::size_t offset) const { return in_ + offset * elemSize_; }
  char* outAt(std::size_t offset) const { return out_ + offset * elemSize_; }
  std::size_t sliceElems() const { return staging_.slotBytes() / elemSize_; }
  OutLink& to(int peer);
  InLink& from(int peer);
  // A connection's first use in this operation: registered with the
  // progress engine, told the protocol, and aligned if the plan asks.
  template <typename Connection>
  Connection* attach(Connection& connection);
  // Copies into the output buffer.
  void copyOut(char* dst, const char* src, std::size_t bytes);
  // Waits for room in a peer's buffer (at least `minBytes`, at most
  // `maxBytes`) or for data in it (in-place transports).
  std::span<char> waitRoom(transport::SendConnection& to, std::size_t minBytes,
                           std::size_t maxBytes);
  std::span<const char> waitData(transport::RecvConnection& from, std::size_t minBytes);
  // Single copy: tells `to` where `bytes` of ours are, and copies what
  // `from` described into `dst`.
  void describe(transport::SendConnection& to, const char* data, std::size_t bytes);
  void copyDescribed(transport::RecvConnection& from, char* dst, std::size_t bytes);
  // Before this rank waits for a peer's data: stamps that no bytes carry
  // yet leave alone, so that a peer waiting for them (a rank with nothing
  // to receive, or one that waits too) is not kept waiting by this wait.
  void flushStamps() {
    if (stampsToFlush_) flushStampsNow();
  }
  void flushStampsNow();
  // A free staging slot (waits for its previous send if needed).
  char* acquireSlot(int* index);
  void receiveInto(transport::RecvConnection& from, char* dst, std::size_t bytes);
  void sendFromSlot(transport::SendConnection& to, int index, std::size_t bytes);
  // Shared body of the recv-and-reduce primitives; to == nullptr: nothing
  // goes on.
  void recvReduce(transport::RecvConnection& from, transport::SendConnection* to,
                  std::size_t inOffset, char* dst, std::size_t count, bool finalize, bool dstIsSlot);
  // The same, reading the operand in the sender's buffer. dst == nullptr:
  // the result only goes on to `to`.
  void recvReduceInPlace(transport::RecvConnection& from, transport::SendConnection* to,
                         std::size_t inOffset, char* dst, std::size_t count, bool finalize);
  // n elements of local and remote reduced into the next rank's FIFO at
  // `room` and into `target` (null: none), the FIFO written around the
  // cache (Options::streamingFifo).
  void reduceIntoFifo(char* room, char* target, const char* local, const char* remote, std::size_t n,
                      bool finalize);

  ProgressEngine& engine_;
  transport::Connector& connector_;
  HostLinks& links_;
  const char* in_;
  char* out_;
  kernels::ReduceSpec spec_;
  std::size_t elemSize_;
  bool hasPre_;
  bool streaming_;
  bool streamingFifo_;
  bool singleCopy_;
  bool alignStreams_;
  protocols::Protocol protocol_;
  const transport::OpStamp* stamp_;
  bool stampsToFlush_ = false;  // a stamped send link was attached since the last flush
  // stampRing's links while the schedule has not used them (-1 then).
  int ringNext_ = -1, ringPrev_ = -1;
  bool describedAny_ = false;
  StagingPool& staging_;
  int nextSlot_ = 0;
};

}  // namespace hora::core
