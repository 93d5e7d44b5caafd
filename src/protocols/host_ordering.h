// The memory-ordering policy for protocols run by CPU threads (or processes
// sharing a mapping). The protocols (simple.h, ll.h) are written once against
// a policy type; this one uses the compiler's __atomic builtins, which work
// on plain uint64_t/uint32_t in shared memory (std::atomic_ref would too, but
// it cannot take the const pointers a reader holds).
//
// The ordering each call gives, and why the protocols need no more:
//  - loadAcquire / storeRelease: on the counters that hand a slot from one
//    side to the other. A side writes (or reads) a slot, then release-stores
//    its counter; the other side acquire-loads that counter and only then
//    touches the slot. Release keeps the slot accesses before the store,
//    acquire keeps the later ones after the load, so whoever sees the new
//    counter value also sees (or no longer disturbs) the slot's bytes.
//  - loadRelaxed / storeRelaxed: a side's own counter, which only it writes;
//    read back when a new sender/receiver object resumes a stream.
//  - loadLine / storeLine: one LL line, 8 bytes read or written as a whole
//    (an aligned 8-byte access is single-copy atomic on x86-64 and AArch64).
//    Relaxed is enough: a line's data and its flag travel in the same atomic
//    word, so a reader that sees the flag sees that store's data too.
//  - fenceRelease / fenceAcquire: for a side that hands over on two FIFOs
//    at once (transport/shm: Simple slots and LL lines, one stream). The
//    sender's release fence before its LL lines, and the receiver's
//    acquire fence after it saw one of them, make every Simple slot the
//    sender published before those lines visible to the receiver: whether
//    one is there then tells which FIFO the stream went on first.
//  - loadFlag / storeFlag: the abort flag. It guards no data, so relaxed;
//    it only has to become visible eventually, which any store does.
//  - relax(spins): the hint inside a polling loop; spins counts the polls so
//    far. A pause instruction at first (it frees the core's pipeline for a
//    sibling hyper-thread and avoids a memory-order mis-speculation flush
//    when the line finally changes), then a yield of the time slice, so a
//    waiter that shares a core with its peer lets the peer run.
//  - now(): steady_clock in nanoseconds: the unit of every deadline passed
//    to a protocol running under this policy.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "base/deadline.h"
#include "protocols/status.h"

namespace hora::protocols {

struct HostOrdering {
  static std::uint64_t loadAcquire(const std::uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  static void storeRelease(std::uint64_t* p, std::uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
  static std::uint64_t loadRelaxed(const std::uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
  static void storeRelaxed(std::uint64_t* p, std::uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

  static std::uint64_t loadLine(const std::uint64_t* line) { return __atomic_load_n(line, __ATOMIC_RELAXED); }
  static void storeLine(std::uint64_t* line, std::uint64_t v) { __atomic_store_n(line, v, __ATOMIC_RELAXED); }

  static void fenceRelease() { __atomic_thread_fence(__ATOMIC_RELEASE); }
  static void fenceAcquire() { __atomic_thread_fence(__ATOMIC_ACQUIRE); }

  static std::uint32_t loadFlag(const std::uint32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
  static void storeFlag(std::uint32_t* p, std::uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
  static std::uint32_t loadFlagAcquire(const std::uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  static void storeFlagRelease(std::uint32_t* p, std::uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

  static constexpr std::uint32_t kSpinsBeforeYield = 256;
  static void relax(std::uint32_t spins) {
    if (spins >= kSpinsBeforeYield) {
      std::this_thread::yield();
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }

  static std::uint64_t now() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }
  // Deadlines in now()'s units.
  static std::uint64_t deadlineAfter(std::chrono::nanoseconds timeout) {
    return now() + static_cast<std::uint64_t>(timeout.count());
  }
  static std::uint64_t deadlineOf(const Deadline& deadline) {
    if (deadline.at() == Deadline::Clock::time_point::max()) return kNoDeadline;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.at().time_since_epoch());
    return ns.count() < 0 ? 0 : static_cast<std::uint64_t>(ns.count());
  }
};

}  // namespace hora::protocols
