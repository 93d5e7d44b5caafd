#include "transport/rdma/registration_cache.h"

#include <unistd.h>

namespace hora::transport::rdma {

RegistrationCache::RegistrationCache() : RegistrationCache(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {}

RegistrationCache::RegistrationCache(std::size_t pageBytes) : pageBytes_(pageBytes) {
  HORA_ENFORCE(pageBytes > 0 && (pageBytes & (pageBytes - 1)) == 0, "RDMA: a page of ", pageBytes, " bytes");
}

RegistrationCache::Pages RegistrationCache::pagesOf(const void* base, std::size_t bytes) const {
  const auto start = reinterpret_cast<std::uintptr_t>(base);
  const std::uintptr_t mask = pageBytes_ - 1;
  return {start & ~mask, (start + bytes + mask) & ~mask};
}

Region RegistrationCache::regionIn(const Pages& pages, const Registration& registration, void* base,
                                   std::size_t bytes) {
  // The region starts at `base`, inside the registration: a peer names its
  // first byte that far past the registration's first.
  const std::uint64_t into = reinterpret_cast<std::uintptr_t>(base) - pages.first;
  return Region{static_cast<char*>(base), bytes, registration.localKey, registration.remoteKey,
                registration.remoteAddress + into};
}

void* RegistrationCache::handleOf(const Region& region) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = entries_.find(pagesOf(region.base, region.bytes));
  return found == entries_.end() ? nullptr : found->second.registration.handle;
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
