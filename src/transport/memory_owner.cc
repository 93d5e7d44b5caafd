#include "transport/memory_owner.h"

#include <atomic>

namespace hora::transport {

std::uint64_t newMemoryOwner() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hora::transport
