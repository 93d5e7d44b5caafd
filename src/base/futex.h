// Sleeping on words of shared memory until another thread or process
// changes them: Linux futexes, shared between processes (not "private"),
// so they work on a mapping two processes share.
//
// A waiter that watches several words at once (a rank waiting on several
// connections) uses futex_waitv (Linux 5.16); one word needs only the
// classic FUTEX_WAIT, which every Linux has.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace hora {

struct FutexExpectation {
  const std::uint32_t* word;
  std::uint32_t value;  // sleep only while *word still holds this
};

enum class FutexSleep {
  Woken,        // woken, a word differed, a signal came, or the time ran out
  Unsupported,  // the kernel cannot wait on several words: poll instead
};

// The most words one wait may watch (futex_waitv's limit).
inline constexpr std::size_t kFutexWaitMaxWords = 128;

// Sleeps until one of `words` no longer holds its value (checked by the
// kernel atomically with going to sleep, so a change made just before
// cannot be missed), a wake on one of them, or `timeout`. At most
// kFutexWaitMaxWords words.
FutexSleep futexWaitAny(std::span<const FutexExpectation> words, std::chrono::microseconds timeout);

// Wakes every thread sleeping on `word`, in any process.
void futexWakeAll(std::uint32_t* word);

}  // namespace hora
