// Waking a rank that sleeps until its peer moves, for ranks that share
// cores (core/wait_mode.h). A rank that has waited out its budget
// (yielding the core between looks, core/progress_wait.h) sleeps here and
// uses no CPU until the peer that gives it work wakes exactly it, where
// sleeping in poll() it would wake every 50 us to look: shared memory
// wakes no file descriptor.
//
// One line per waiting end of a connection, in memory both ends share:
//
//   waiter:  e = bell; sleeping = 1; fence; look for progress again;
//            nothing? futex-wait while bell == e; sleeping = 0
//   waker:   publish (data, room); fence; if sleeping: ++bell, futex-wake
//
// Why no wake is lost: of the waiter's store of `sleeping` and the waker's
// store of what it published, each followed by a full fence before the
// other's load, at least one is seen by the other side's load. Either the
// waiter's second look finds the progress, or the waker sees `sleeping`
// and changes the bell, which the kernel compares with e as the waiter
// goes to sleep. A waker that sees a stale `sleeping` only wakes nobody.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/futex.h"

namespace hora::transport {

struct alignas(64) WakeLine {
  std::uint32_t sleeping;  // the waiting end is asleep or about to be
  std::uint32_t bell;      // changed by the other end to wake it
};

// The waker's half: called right after publishing progress the other end
// may wait for.
inline void wakeIfSleeping(WakeLine& line) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<std::uint32_t>(line.sleeping).load(std::memory_order_relaxed) == 0) return;
  std::atomic_ref<std::uint32_t>(line.bell).fetch_add(1, std::memory_order_relaxed);
  futexWakeAll(&line.bell);
}

// The waiter's half, in two steps around its second look for progress:
// announceSleep() returns what the bell must still hold for the sleep to
// begin; endSleep() follows the sleep, or a second look that found work.
inline std::uint32_t announceSleep(WakeLine& line) {
  const std::uint32_t bell = std::atomic_ref<std::uint32_t>(line.bell).load(std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(line.sleeping).store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return bell;
}
inline void endSleep(WakeLine& line) {
  std::atomic_ref<std::uint32_t>(line.sleeping).store(0, std::memory_order_relaxed);
}

}  // namespace hora::transport
