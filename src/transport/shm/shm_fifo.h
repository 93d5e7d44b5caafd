// A one-directional byte FIFO in memory shared by two processes (or threads):
// a ring of `capacity` bytes with two monotonically growing counters, each
// written by one side only and kept on its own cache line so the two sides
// never write the same line.
//
//   producer: free = capacity - (written - read); copy in; written += n (release)
//   consumer: avail = written - read;             copy out; read += n (release)
//
// The acquire load of the other side's counter orders the data copies
// against it, so no lock and no fence beyond those is needed.
//
// The producer keeps the last `read` it loaded and loads it again only when
// that leaves less room than it wants: the line holding `read` was last
// written by the consumer, so every load of it is a transfer between cores,
// and a small message would otherwise pay one before it could even be
// written. A stale value only understates the free room, and only while
// there is more than the producer wants, so min(wanted, room) is exact.
//
// The ring is mapped twice back to back (shm_segment.h), so the free and the
// available bytes are always one contiguous range: a side may also work in
// the ring itself (writeRegion/commitWrite, readRegion/commitRead), which is
// how a reduction reads its operand from the FIFO, or writes its result into
// it, without a copy of its own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hora::transport {

struct alignas(64) ShmFifoHeader {
  static constexpr std::uint64_t kMagic = 0x686f72612d666967ull;  // "hora-fig"
  std::uint64_t magic;
  std::uint64_t capacity;
  std::uint64_t dataOffset;  // where the ring starts in the segment
  alignas(64) std::atomic<std::uint64_t> written;
  alignas(64) std::atomic<std::uint64_t> read;
};

// The FIFO over one mapped segment; the segment outlives it.
class ShmFifo {
 public:
  explicit ShmFifo(void* segment)
      : header_(static_cast<ShmFifoHeader*>(segment)),
        data_(static_cast<char*>(segment) + header_->dataOffset),
        capacity_(header_->capacity),
        knownRead_(header_->read.load(std::memory_order_acquire)) {}

  std::uint64_t capacity() const { return capacity_; }
  ShmFifoHeader& header() const { return *header_; }
  std::uint64_t freeBytes() const {
    return capacity_ - (header_->written.load(std::memory_order_relaxed) -
                        header_->read.load(std::memory_order_acquire));
  }
  std::uint64_t availableBytes() const {
    return header_->written.load(std::memory_order_acquire) -
           header_->read.load(std::memory_order_relaxed);
  }

  // Free bytes, contiguous: all of them, or at least `wanted` (see above);
  // and publishing `bytes` of them once written.
  char* writeRegion(std::size_t* bytes, std::size_t wanted) const {
    const std::uint64_t written = header_->written.load(std::memory_order_relaxed);
    std::uint64_t room = capacity_ - (written - knownRead_);
    if (room < wanted) {
      knownRead_ = header_->read.load(std::memory_order_acquire);
      room = capacity_ - (written - knownRead_);
    }
    *bytes = room;
    return data_ + written % capacity_;
  }
  void commitWrite(std::size_t bytes) {
    header_->written.store(header_->written.load(std::memory_order_relaxed) + bytes,
                           std::memory_order_release);
  }
  // The available bytes, contiguous, and releasing `bytes` of them once read.
  const char* readRegion(std::size_t* bytes) const {
    *bytes = availableBytes();
    return data_ + header_->read.load(std::memory_order_relaxed) % capacity_;
  }
  void commitRead(std::size_t bytes) {
    header_->read.store(header_->read.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_release);
  }

  // Copies up to `bytes` from `src` into the ring; returns the bytes taken.
  std::size_t push(const char* src, std::size_t bytes);
  // Copies up to `bytes` from the ring into `dst`; returns the bytes given.
  std::size_t pop(char* dst, std::size_t bytes);

 private:
  ShmFifoHeader* header_;
  char* data_;
  std::uint64_t capacity_;
  mutable std::uint64_t knownRead_;  // producer side: `read` as last loaded
};

}  // namespace hora::transport
