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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hora::transport {

struct alignas(64) ShmFifoHeader {
  static constexpr std::uint64_t kMagic = 0x686f72612d666966ull;  // "hora-fif"
  std::uint64_t magic;
  std::uint64_t capacity;
  alignas(64) std::atomic<std::uint64_t> written;
  alignas(64) std::atomic<std::uint64_t> read;
  // Payload bytes the receiver has finished with (copied out of the FIFO or
  // pulled from the sender's memory): the sender's completion counter.
  alignas(64) std::atomic<std::uint64_t> consumed;
};

// Offset of the data ring from the start of the segment.
inline constexpr std::size_t kShmFifoDataOffset = 4096;
static_assert(sizeof(ShmFifoHeader) <= kShmFifoDataOffset);

// The FIFO over one mapped segment; the segment outlives it.
class ShmFifo {
 public:
  explicit ShmFifo(void* segment)
      : header_(static_cast<ShmFifoHeader*>(segment)),
        data_(static_cast<char*>(segment) + kShmFifoDataOffset) {}

  std::uint64_t capacity() const { return header_->capacity; }
  ShmFifoHeader& header() const { return *header_; }
  std::uint64_t freeBytes() const {
    return header_->capacity - (header_->written.load(std::memory_order_relaxed) -
                                header_->read.load(std::memory_order_acquire));
  }
  std::uint64_t availableBytes() const {
    return header_->written.load(std::memory_order_acquire) -
           header_->read.load(std::memory_order_relaxed);
  }
  // Copies up to `bytes` from `src` into the ring; returns the bytes taken.
  std::size_t push(const char* src, std::size_t bytes);
  // Copies up to `bytes` from the ring into `dst`; returns the bytes given.
  std::size_t pop(char* dst, std::size_t bytes);

 private:
  ShmFifoHeader* header_;
  char* data_;
};

}  // namespace hora::transport
