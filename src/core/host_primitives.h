// The primitives of the ring schedules (algorithms/ring.h) for host memory,
// over a transport's send connection to the next rank and receive connection
// from the previous one.
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

namespace hora::core {

// Cache-sized staging slots, owned by the communicator and reused by every
// collective.
class StagingPool {
 public:
  StagingPool(std::size_t slotBytes, int slots);
  std::size_t slotBytes() const { return slotBytes_; }
  int slots() const { return static_cast<int>(marks_.size()); }
  char* slot(int index) { return memory_.data() + static_cast<std::size_t>(index) * slotBytes_; }
  // The send position after which the slot's last content has left (0: free).
  std::uint64_t& sendMark(int index) { return marks_[index]; }

 private:
  std::size_t slotBytes_;
  std::vector<char> memory_;
  std::vector<std::uint64_t> marks_;
};

class HostPrimitives {
 public:
  // streamingStores: the output is large; copies into it bypass the cache
  // (kernels/copy_host.h). singleCopy: a collective that only moves data
  // (all-gather, broadcast) may describe its buffers to the next rank
  // instead of sending their bytes, where that rank can read this process's
  // memory: it then copies them once, straight from buffer to buffer.
  HostPrimitives(ProgressEngine& engine, transport::SendConnection* next,
                 transport::RecvConnection* prev, const void* in, void* out,
                 const kernels::ReduceSpec& spec, StagingPool& staging, bool streamingStores,
                 bool singleCopy);

  void send(std::size_t inOffset, std::size_t count);
  void recv(std::size_t outOffset, std::size_t count);
  void recvReduceSend(std::size_t inOffset, std::size_t count);
  void recvReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvReduceCopySend(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void recvCopySend(std::size_t outOffset, std::size_t count);
  void copySend(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);
  void localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count);

  // Waits until every queued send has left.
  void finish();

 private:
  const char* inAt(std::size_t offset) const { return in_ + offset * elemSize_; }
  char* outAt(std::size_t offset) const { return out_ + offset * elemSize_; }
  std::size_t sliceElems() const { return staging_.slotBytes() / elemSize_; }
  // Copies into the output buffer.
  void copyOut(char* dst, const char* src, std::size_t bytes);
  // Waits for room in the next rank's buffer (at least `minBytes`, at most
  // `maxBytes`) or for data in the previous rank's (in-place transports).
  std::span<char> waitRoom(std::size_t minBytes, std::size_t maxBytes);
  std::span<const char> waitData(std::size_t minBytes);
  // Single copy: tells the next rank where `bytes` of ours are, and copies
  // what the previous rank described into `dst`.
  void describe(const char* data, std::size_t bytes);
  void copyDescribed(char* dst, std::size_t bytes);
  // A free staging slot (waits for its previous send if needed).
  char* acquireSlot(int* index);
  void receiveInto(char* dst, std::size_t bytes);
  void sendFromSlot(int index, std::size_t bytes);
  // Shared body of the recv-and-reduce primitives.
  void recvReduce(std::size_t inOffset, char* dst, std::size_t count, bool finalize, bool forward,
                  bool dstIsSlot);
  // The same, reading the operand in the previous rank's buffer. dst ==
  // nullptr: the result only goes on to the next rank.
  void recvReduceInPlace(std::size_t inOffset, char* dst, std::size_t count, bool finalize,
                         bool forward);

  ProgressEngine& engine_;
  transport::SendConnection* next_;
  transport::RecvConnection* prev_;
  const char* in_;
  char* out_;
  kernels::ReduceSpec spec_;
  std::size_t elemSize_;
  bool hasPre_;
  bool streaming_;
  bool describeToNext_ = false;    // single copy towards the next rank
  bool copyFromPrevious_ = false;  // single copy from the previous rank
  StagingPool& staging_;
  int nextSlot_ = 0;
};

}  // namespace hora::core
