// A point in time after which a wait gives up. Every blocking operation in
// hora takes one, so no wait on a peer can last forever.
#pragma once

#include <chrono>

namespace hora {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // After `timeout` from now; never() where that is past what the clock
  // holds (a timeout meant as "practically never").
  static Deadline after(std::chrono::milliseconds timeout) { return plusOrNever(Clock::now(), timeout); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, rounded up (so that a wait for the last fraction of
  // a millisecond sleeps instead of spinning in poll(0)) and clamped to
  // [0, cap]: suitable for poll().
  int pollTimeoutMs(int cap = 1000) const {
    if (at_ == Clock::time_point::max()) return cap;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left <= 0) return 0;
    return left < cap ? static_cast<int>(left) : cap;
  }
  Clock::time_point at() const { return at_; }
  // This deadline moved later by `extra` (never past never()).
  Deadline extendedBy(std::chrono::milliseconds extra) const { return plusOrNever(at_, extra); }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  static Deadline plusOrNever(Clock::time_point from, std::chrono::milliseconds extra) {
    // Compared in milliseconds: `extra` in the clock's nanoseconds could
    // itself overflow.
    const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - from);
    return extra >= room ? never() : Deadline(from + extra);
  }
  Clock::time_point at_;
};

}  // namespace hora
