// The memory registrations of one protection domain (a verbs port's PD, a
// libfabric domain), shared by every queue pair on it.
//
// A NIC registration covers whole pages (the pages are what it pins), and
// every queue pair of a domain may use any registration of that domain. So
// a buffer used by several connections (a registered buffer sent to each
// peer of an all-to-all, the staging slots of a connection's several queue
// pairs) is registered once: requests are rounded out to whole pages and
// counted, and the registration ends when the last holder releases it.
//
// Only requests whose page-rounded range is the same share a registration,
// never one that merely lies inside another's. A holder's own memory spans
// every page of its range, so while any holder's memory is live, all of
// the registration's pages stay mapped to what was registered. A lookup by
// containment would hand a registration made for a buffer since freed (its
// pages possibly unmapped and mapped again to other memory, which the
// registration does not see) to a newcomer at the same address: silently
// wrong data. Holders release before they free (the callers' contract: a
// stream's queue pairs close before its memory is freed; a program
// deregisters a buffer before it frees it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "base/error.h"
#include "transport/rdma/queue_pair.h"

namespace hora::transport::rdma {

// What a backend made for one page-rounded range: its keys, how a peer
// names the range's first byte, and the backend's own handle.
struct Registration {
  std::uint64_t localKey = 0;
  std::uint64_t remoteKey = 0;
  std::uint64_t remoteAddress = 0;
  void* handle = nullptr;
};

class RegistrationCache {
 public:
  // Pages of the system's size, or `pageBytes` (a power of two).
  RegistrationCache();
  explicit RegistrationCache(std::size_t pageBytes);
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // The region for [base, base + bytes) (bytes > 0): from the registration
  // of its page-rounded range, made by `make(start, bytes)` (returning a
  // Registration) when there is none yet. A throwing `make` leaves the
  // cache as it was.
  template <typename Make>
  Region acquire(void* base, std::size_t bytes, Make&& make) {
    HORA_ENFORCE(bytes > 0, "RDMA: registering no bytes");
    const Pages pages = pagesOf(base, bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(pages);
    if (found == entries_.end()) {
      Registration made = make(reinterpret_cast<char*>(pages.first), pages.second - pages.first);
      found = entries_.emplace(pages, Entry{made, 0}).first;
      ++registrationsMade_;
    }
    ++found->second.holders;
    return regionIn(found->first, found->second.registration, base, bytes);
  }

  // Gives back a region acquire() returned; the registration ends, through
  // `end(handle)`, with its last holder.
  template <typename End>
  void release(const Region& region, End&& end) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(pagesOf(region.base, region.bytes));
    HORA_ENFORCE(found != entries_.end() && found->second.holders > 0,
                 "RDMA: releasing memory that was never registered");
    if (--found->second.holders > 0) return;
    // Ended under the lock, so that a page range never has two
    // registrations at once.
    end(found->second.registration.handle);
    entries_.erase(found);
  }

  // The backend's handle of a region acquire() returned (null if none).
  void* handleOf(const Region& region) const;
  // Registrations in force, and made over the cache's life.
  std::size_t registrations() const;
  std::uint64_t registrationsMade() const;

 private:
  using Pages = std::pair<std::uintptr_t, std::uintptr_t>;  // [first, end), page-aligned
  struct Entry {
    Registration registration;
    std::size_t holders;
  };
  Pages pagesOf(const void* base, std::size_t bytes) const;
  static Region regionIn(const Pages& pages, const Registration& registration, void* base, std::size_t bytes);

  std::size_t pageBytes_;
  mutable std::mutex mutex_;
  std::map<Pages, Entry> entries_;
  std::uint64_t registrationsMade_ = 0;
};

}  // namespace hora::transport::rdma
