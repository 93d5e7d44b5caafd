#include "transport/rdma/registration_cache.h"

#include <algorithm>

namespace hora::transport::rdma {

std::optional<HeldRegion> takeHeldRegion(std::vector<HeldRegion>& held, const Region& region) {
  const auto found = std::find_if(held.begin(), held.end(), [&](const HeldRegion& one) {
    return one.region.base == region.base && one.region.bytes == region.bytes &&
           one.region.localKey == region.localKey;
  });
  if (found == held.end()) return std::nullopt;
  const HeldRegion taken = *found;
  held.erase(found);
  return taken;
}

std::size_t RegistrationCache::registrations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

std::uint64_t RegistrationCache::registrationsMade() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registrationsMade_;
}

}  // namespace hora::transport::rdma
