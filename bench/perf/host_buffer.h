// A block of host memory owned by one rank for the whole run.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace hora::perf {

class HostBuffer {
 public:
  // 64-byte aligned (a cache line), at least 64 bytes; null data() when the
  // allocation failed.
  explicit HostBuffer(std::size_t bytes)
      : memory_(std::aligned_alloc(kAlignment, roundUp(bytes)), &std::free) {}

  void* data() const { return memory_.get(); }

 private:
  static constexpr std::size_t kAlignment = 64;
  static std::size_t roundUp(std::size_t bytes) {
    return bytes < kAlignment ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  std::unique_ptr<void, decltype(&std::free)> memory_;
};

}  // namespace hora::perf
