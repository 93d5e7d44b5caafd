#include "base/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <vector>

#include "base/error.h"

namespace hora {

namespace {
timespec relative(std::chrono::microseconds timeout) {
  return {static_cast<time_t>(timeout.count() / 1000000), static_cast<long>(timeout.count() % 1000000 * 1000)};
}

// futex_waitv takes an absolute time on the clock it is given.
timespec absoluteMonotonic(std::chrono::microseconds timeout) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const timespec add = relative(timeout);
  now.tv_sec += add.tv_sec;
  now.tv_nsec += add.tv_nsec;
  if (now.tv_nsec >= 1000000000) {
    now.tv_nsec -= 1000000000;
    ++now.tv_sec;
  }
  return now;
}

// Cleared the first time the kernel says it has no futex_waitv (older than
// 5.16, or a sandbox that filters it): every later wait polls at once.
std::atomic<bool> waitvWorks{true};
}  // namespace

FutexSleep futexWaitAny(std::span<const FutexExpectation> words, std::chrono::microseconds timeout) {
  if (words.empty()) return FutexSleep::Unsupported;
  if (words.size() == 1) {
    const timespec after = relative(timeout);
    ::syscall(SYS_futex, words[0].word, FUTEX_WAIT, words[0].value, &after, nullptr, 0);
    return FutexSleep::Woken;  // EAGAIN (changed), EINTR, ETIMEDOUT alike: look again
  }
#ifdef SYS_futex_waitv
  static_assert(kFutexWaitMaxWords == FUTEX_WAITV_MAX);
  if (words.size() > kFutexWaitMaxWords) fail(ErrorKind::Internal, "a futex wait on ", words.size(), " words");
  if (waitvWorks.load(std::memory_order_relaxed)) {
    futex_waitv waiters[FUTEX_WAITV_MAX] = {};
    for (std::size_t i = 0; i < words.size(); ++i) {
      waiters[i].val = words[i].value;
      waiters[i].uaddr = reinterpret_cast<std::uintptr_t>(words[i].word);
      waiters[i].flags = FUTEX_32;  // shared between processes: not FUTEX_PRIVATE_FLAG
    }
    const timespec until = absoluteMonotonic(timeout);
    // ENOSYS: no such call; EPERM: a sandbox's system call filter.
    if (::syscall(SYS_futex_waitv, waiters, words.size(), 0, &until, CLOCK_MONOTONIC) >= 0 ||
        (errno != ENOSYS && errno != EPERM))
      return FutexSleep::Woken;
    waitvWorks.store(false, std::memory_order_relaxed);
  }
#endif
  return FutexSleep::Unsupported;
}

void futexWakeAll(std::uint32_t* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace hora
