// Host buffers the program registered with its communicator
// (ncclCommRegister): its promise that each stays allocated, at the same
// pages, until it deregisters it and while no call that uses it runs.
//
// Transports that can send from the program's memory directly (the RDMA
// credit protocol, rdma/credit_stream.h) register such a buffer with their
// NIC once, on first use, and from then on send from it without a copy.
// Memory the program did not register is never registered with a NIC:
// hora cannot know when it is freed and its pages given to another
// allocation at the same address, and a NIC registration would go on
// naming the old pages (the stale-registration problem that libraries
// with a cache of automatic registrations solve by hooking the allocator).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace hora::transport {

class UserRegistrations {
 public:
  struct Range {
    std::uint64_t id = 0;  // unique in the process (memory_owner.h): the memory's owner for a NIC
    const char* base = nullptr;
    std::size_t bytes = 0;
    // Whether all of [data, data + length) lies in this range.
    bool holds(const void* data, std::size_t length) const {
      const auto at = reinterpret_cast<std::uintptr_t>(data), start = reinterpret_cast<std::uintptr_t>(base);
      return at >= start && length <= bytes && at - start <= bytes - length;
    }
  };

  // Adds [base, base + bytes) and returns its id.
  std::uint64_t add(const void* base, std::size_t bytes);
  // Removes the range `id` (an unknown id is ignored).
  void remove(std::uint64_t id);
  // A registered range that holds all of [data, data + bytes), if any.
  std::optional<Range> find(const void* data, std::size_t bytes) const;
  bool live(std::uint64_t id) const;
  // Changes whenever a range is removed: a user of cached ranges looks
  // for removed ones only when it has changed.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mutex_;
  std::vector<Range> ranges_;  // a program registers few buffers
  std::atomic<std::size_t> count_{0};  // so that find() takes no lock when there are none
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace hora::transport
