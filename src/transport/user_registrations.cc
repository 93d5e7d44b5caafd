#include "transport/user_registrations.h"

#include <algorithm>

#include "transport/memory_owner.h"

namespace hora::transport {

std::uint64_t UserRegistrations::add(const void* base, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = newMemoryOwner();
  ranges_.push_back({id, static_cast<const char*>(base), bytes});
  count_.store(ranges_.size(), std::memory_order_release);
  return id;
}

void UserRegistrations::remove(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto before = ranges_.size();
  std::erase_if(ranges_, [&](const Range& range) { return range.id == id; });
  if (ranges_.size() == before) return;
  count_.store(ranges_.size(), std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::optional<UserRegistrations::Range> UserRegistrations::find(const void* data, std::size_t bytes) const {
  if (count_.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Range& range : ranges_)
    if (range.holds(data, bytes)) return range;
  return std::nullopt;
}

bool UserRegistrations::live(std::uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& range) { return range.id == id; });
}

}  // namespace hora::transport
