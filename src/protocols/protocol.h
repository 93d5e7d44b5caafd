// The protocols a FIFO can carry a message with. The planner picks one per
// operation; both ends of every connection the operation uses are told the
// same choice at the same point of the stream (transport/connection.h,
// beginMessage), so they agree without talking.
#pragma once

#include <cstdint>

namespace hora::protocols {

enum class Protocol : std::uint8_t {
  Simple,  // simple.h: whole slots handed over by head/tail counters (bulk)
  LL,      // ll.h: 8-byte lines of data and flag (small messages)
};

inline const char* protocolName(Protocol protocol) {
  return protocol == Protocol::LL ? "LL" : "Simple";
}

}  // namespace hora::protocols
