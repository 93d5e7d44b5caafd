// Which way each byte of a shared-memory connection's stream travels: the
// Simple FIFO, the LL FIFO, or nowhere (alignment padding, which both ends
// count but neither moves). Each end records a switch at the stream
// position where the executor starts a message (beginMessage) or pads
// (alignStream); both ends make the same calls at the same positions
// (connection.h), so they agree on every byte without telling each other.
//
// Switches fall between posted pieces, never inside one, so a piece travels
// one way whole. Queries come at positions that only grow (the bytes
// completed so far), so switches behind them are dropped as they pass.
#pragma once

#include <cstdint>
#include <deque>

namespace hora::transport {

enum class ShmRoute : std::uint8_t { Simple, LL, Skip };

class ProtocolSwitches {
 public:
  // Bytes from `position` on travel by `route` (until the next switch).
  void switchAt(std::uint64_t position, ShmRoute route) {
    if (route == latest()) return;  // the usual case: every message of a run alike
    if (!switches_.empty() && switches_.back().position == position) {
      switches_.back().route = route;  // nothing travels the replaced route
      return;
    }
    switches_.push_back({position, route});
  }
  // The route of the byte at `position` (at least any earlier query's).
  ShmRoute at(std::uint64_t position) {
    while (switches_.size() > 1 && switches_[1].position <= position) switches_.pop_front();
    return switches_.empty() || switches_.front().position > position ? ShmRoute::Simple
                                                                      : switches_.front().route;
  }
  // The route of the first byte at or after `position` that travels
  // (padding is always followed by a switch back to a route).
  ShmRoute movingAt(std::uint64_t position) {
    const ShmRoute route = at(position);
    if (route != ShmRoute::Skip) return route;
    return switches_.size() > 1 ? switches_[1].route : ShmRoute::Simple;
  }
  // The route of bytes posted from now on.
  ShmRoute latest() const { return switches_.empty() ? ShmRoute::Simple : switches_.back().route; }

 private:
  struct Switch {
    std::uint64_t position;
    ShmRoute route;
  };
  std::deque<Switch> switches_;
};

}  // namespace hora::transport
