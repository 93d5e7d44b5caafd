// A point in time after which a wait gives up. Every blocking operation in
// hora takes one, so no wait on a peer can last forever.
#pragma once

#include <chrono>

namespace hora {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds timeout) { return Deadline(Clock::now() + timeout); }
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
  Deadline extendedBy(std::chrono::milliseconds extra) const {
    return at_ > Clock::time_point::max() - extra ? never() : Deadline(at_ + extra);
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace hora
