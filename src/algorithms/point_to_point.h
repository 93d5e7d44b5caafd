// Point-to-point: one message of `count` elements to or from one peer, in
// the op's own buffer. An executor issues all of a group's sends before its
// first receive waits; sends are queued (primitives.h), so any pattern of
// matched sends and receives completes, all-to-all included. Each channel
// carries its part of the message.
#pragma once

#include <cstddef>

#include "algorithms/primitives.h"
#include "base/host_device.h"

namespace hora::algorithms {

template <typename P>
HORA_HOST_DEVICE void sendMessage(P& p, int peer, Channel channel, std::size_t count,
                                  std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size > 0) p.send(peer, part.start, part.size);
}

template <typename P>
HORA_HOST_DEVICE void recvMessage(P& p, int peer, Channel channel, std::size_t count,
                                  std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size > 0) p.recv(peer, part.start, part.size);
}

}  // namespace hora::algorithms
