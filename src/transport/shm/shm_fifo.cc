#include "transport/shm/shm_fifo.h"

#include <algorithm>
#include <cstring>

namespace hora::transport {

std::size_t ShmFifo::push(const char* src, std::size_t bytes) {
  const std::uint64_t capacity = header_->capacity;
  const std::uint64_t written = header_->written.load(std::memory_order_relaxed);
  const std::uint64_t read = header_->read.load(std::memory_order_acquire);
  std::size_t n = std::min<std::uint64_t>(bytes, capacity - (written - read));
  if (n == 0) return 0;
  std::size_t at = written % capacity;
  std::size_t first = std::min<std::size_t>(n, capacity - at);
  std::memcpy(data_ + at, src, first);
  std::memcpy(data_, src + first, n - first);
  header_->written.store(written + n, std::memory_order_release);
  return n;
}

std::size_t ShmFifo::pop(char* dst, std::size_t bytes) {
  const std::uint64_t capacity = header_->capacity;
  const std::uint64_t read = header_->read.load(std::memory_order_relaxed);
  const std::uint64_t written = header_->written.load(std::memory_order_acquire);
  std::size_t n = std::min<std::uint64_t>(bytes, written - read);
  if (n == 0) return 0;
  std::size_t at = read % capacity;
  std::size_t first = std::min<std::size_t>(n, capacity - at);
  std::memcpy(dst, data_ + at, first);
  std::memcpy(dst + first, data_, n - first);
  header_->read.store(read + n, std::memory_order_release);
  return n;
}

}  // namespace hora::transport
