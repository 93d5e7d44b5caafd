#include "transport/rdma/registration_cache.h"

namespace hora::transport::rdma {

std::size_t RegistrationCache::registrations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

std::uint64_t RegistrationCache::registrationsMade() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return registrationsMade_;
}

}  // namespace hora::transport::rdma
