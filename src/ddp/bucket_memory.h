// The operations the Reducer performs on bucket memory, per kind of memory:
// host memory, and device memory in builds with CUDA (allocation, zeroing
// and copies done by the device, complete when they return). The Reducer
// does not change with the kind. Arithmetic on gradients happens inside
// collectives and hooks, never here.
#pragma once

#include <cstddef>
#include <utility>

#include "hora/ddp/bucket_layout.h"

namespace hora::ddp {

class BucketMemory {
 public:
  virtual ~BucketMemory() = default;
  // Zero-filled, aligned for any element type.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* data) noexcept = 0;
  virtual void zero(void* data, std::size_t bytes) = 0;
  virtual void copy(void* destination, const void* source, std::size_t bytes) = 0;
};

// The implementation for a kind of memory; throws hora::Error(InvalidUsage)
// for kinds this build cannot handle.
BucketMemory& bucketMemoryFor(MemoryKind kind);

// One allocation from a BucketMemory, released on destruction.
class BucketBuffer {
 public:
  BucketBuffer() = default;
  BucketBuffer(BucketMemory& memory, std::size_t bytes)
      : memory_(&memory), data_(memory.allocate(bytes)), bytes_(bytes) {}
  BucketBuffer(BucketBuffer&& other) noexcept
      : memory_(other.memory_), data_(std::exchange(other.data_, nullptr)), bytes_(other.bytes_) {}
  BucketBuffer& operator=(BucketBuffer&& other) noexcept {
    std::swap(memory_, other.memory_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~BucketBuffer() {
    if (data_) memory_->release(data_);
  }

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  BucketMemory& memory() const { return *memory_; }

 private:
  BucketMemory* memory_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace hora::ddp
