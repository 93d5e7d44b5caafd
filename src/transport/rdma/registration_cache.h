// The memory registrations of one protection domain (a verbs port's PD, a
// libfabric domain), shared by every queue pair on it.
//
// Every queue pair of a domain may use any registration of that domain, so
// memory that several queue pairs use (a registered buffer sent to several
// peers, a stream's staging over its several queue pairs) needs only one:
// the queue pairs that ask for the same memory of the same owner get the
// one registration, counted, and it ends with its last holder.
//
// What is shared is keyed by the memory's owner (memory_owner.h: a number
// for one lifetime of the memory, never reused), its exact range and the
// rights it was registered with (queue_pair.h, Access: memory registered
// for this side's reads is never handed to a caller that needs peers'
// writes, nor the other way round).
//  - The owner, because a holder may keep a registration after its memory
//    went back to the program (ncclCommDeregister on a failed communicator
//    leaves the release to the connection), and the program may free that
//    memory and get new memory at the same address: a registration found
//    by address alone would be the old pages', which the NIC would go on
//    reading. New memory comes with a new owner, so a new registration.
//  - The exact range, not whole pages, though the NIC pins whole pages: a
//    registration's bounds are what the NIC checks a peer's write against,
//    and pages rounded out would let a stray write land in the objects
//    that share the first and last page instead of failing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "transport/rdma/queue_pair.h"

namespace hora::transport::rdma {

// What a backend made for one range: its keys, how a peer names the
// range's first byte, and the backend's own handle.
struct Registration {
  std::uint64_t localKey = 0;
  std::uint64_t remoteKey = 0;
  std::uint64_t remoteAddress = 0;
  void* handle = nullptr;
};

// A region acquire() gave, with what the cache needs to take it back.
struct HeldRegion {
  Region region;
  std::uint64_t owner = 0;  // as the cache keys it
};

// Removes from `held` (a queue pair's regions) the one acquire() gave as
// `region`, and returns it; nullopt if it holds none such.
std::optional<HeldRegion> takeHeldRegion(std::vector<HeldRegion>& held, const Region& region);

class RegistrationCache {
 public:
  RegistrationCache() = default;
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // The region for [base, base + bytes) of `owner` (0: shared with no one)
  // with `access`: the registration already made for it, or one
  // `make(base, bytes)` makes now (returning a Registration with those
  // rights). A throwing `make` leaves the cache as it was; `end(handle)`
  // undoes a registration the cache could not keep.
  template <typename Make, typename End>
  HeldRegion acquire(std::uint64_t owner, void* base, std::size_t bytes, Access access, Make&& make, End&& end) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owner != 0)
      if (const auto found = entries_.find(keyOf(owner, base, bytes, access)); found != entries_.end()) {
        ++found->second.holders;
        return {regionOf(found->second.registration, base, bytes, access), owner};
      }
    // Memory shared with no one is kept under an owner of its own, which
    // no caller names.
    if (owner == 0) owner = kOwnerless | nextOwnerless_++;
    const Registration made = make(static_cast<char*>(base), bytes);
    try {
      entries_.emplace(keyOf(owner, base, bytes, access), Entry{made, 1});
    } catch (...) {
      end(made.handle);
      throw;
    }
    ++registrationsMade_;
    return {regionOf(made, base, bytes, access), owner};
  }

  // Gives back a region acquire() gave; the registration ends, through
  // `end(handle)`, with its last holder.
  template <typename End>
  void release(const HeldRegion& held, End&& end) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(keyOf(held.owner, held.region.base, held.region.bytes, held.region.access));
    HORA_ENFORCE(found != entries_.end() && found->second.holders > 0,
                 "RDMA: releasing memory that was never registered");
    if (--found->second.holders > 0) return;
    // Ended under the lock: memory of one owner never has two
    // registrations at once.
    end(found->second.registration.handle);
    entries_.erase(found);
  }

  // Registrations in force, and made over the cache's life.
  std::size_t registrations() const;
  std::uint64_t registrationsMade() const;

 private:
  using Key = std::tuple<std::uint64_t, std::uintptr_t, std::size_t, Access>;  // owner, start, bytes, rights
  struct Entry {
    Registration registration;
    std::size_t holders;
  };
  static constexpr std::uint64_t kOwnerless = std::uint64_t{1} << 63;  // above every real owner
  static Key keyOf(std::uint64_t owner, const void* base, std::size_t bytes, Access access) {
    return {owner, reinterpret_cast<std::uintptr_t>(base), bytes, access};
  }
  static Region regionOf(const Registration& registration, void* base, std::size_t bytes, Access access) {
    return Region{static_cast<char*>(base), bytes, registration.localKey, registration.remoteKey,
                  registration.remoteAddress, access};
  }

  mutable std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::uint64_t registrationsMade_ = 0;
  std::uint64_t nextOwnerless_ = 1;
};

}  // namespace hora::transport::rdma
