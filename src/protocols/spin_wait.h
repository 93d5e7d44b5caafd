// The one polling loop behind every protocol wait: poll a condition until it
// holds, the FIFO's abort flag is raised, the deadline passes, or something
// else the caller watches gives up.
//
// The condition is polled first and on every iteration; the abort flag, the
// clock and the watch only every kCheckEvery polls, since a clock read costs
// more than a poll of a line already in cache, and a wait that ends within a
// few polls should not pay for it. A condition that holds wins over a raised
// flag, a passed deadline or a watch: the work it unblocks is already there;
// so a watch that gives up is followed by one more look at the condition.
#pragma once

#include <cstdint>

#include "base/host_device.h"
#include "protocols/status.h"

namespace hora::protocols {

inline constexpr std::uint32_t kCheckEvery = 64;

// A wait's watch that never gives up.
struct NoWatch {
  HORA_HOST_DEVICE constexpr Status operator()() const { return Status::Ok; }
};

// A watch on a word the other side of the FIFO writes when it stops (the
// FIFO's abort line, where the wait's abort flag is another word): nonzero
// ends the wait with PeerStopped. A null word is never written. The word is
// written with release after the last piece the stopping side sent, and
// read here with acquire, so that spinUntil's second look at its condition
// sees that piece.
template <class Ordering>
struct StopLineWatch {
  const std::uint32_t* line;
  HORA_HOST_DEVICE Status operator()() const {
    return line != nullptr && Ordering::loadFlagAcquire(line) != 0 ? Status::PeerStopped : Status::Ok;
  }
};

// Two watches, the first asked first.
template <class First, class Second>
struct EitherWatch {
  First first;
  Second second;
  HORA_HOST_DEVICE Status operator()() {
    const Status status = first();
    return status != Status::Ok ? status : second();
  }
};

// `watch()` returns Ok to go on waiting, or the status the wait ends with.
template <class Ordering, class Ready, class Watch = NoWatch>
HORA_HOST_DEVICE Status spinUntil(Ready&& ready, const std::uint32_t* abortFlag, std::uint64_t deadline,
                                  Watch watch = Watch{}) {
  for (std::uint32_t spins = 0;; spins = spins == ~0u ? spins : spins + 1) {
    if (ready()) return Status::Ok;
    if (spins % kCheckEvery == kCheckEvery - 1) {
      if (abortFlag != nullptr && Ordering::loadFlag(abortFlag) != 0) return Status::Aborted;
      if (deadline != kNoDeadline && Ordering::now() >= deadline) return Status::TimedOut;
      // The condition once more: a peer that stops after its last piece
      // must not have that piece refused (StopLineWatch).
      if (const Status watched = watch(); watched != Status::Ok) return ready() ? Status::Ok : watched;
    }
    Ordering::relax(spins);
  }
}

}  // namespace hora::protocols
