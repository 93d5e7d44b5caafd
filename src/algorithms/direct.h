// Direct (one-shot) schedules: every rank talks to every other rank at once,
// one message latency instead of a ring's 2(n-1) steps. They win for small
// messages, where latency and not bandwidth is the cost.
#pragma once

#include <cstddef>

#include "algorithms/primitives.h"
#include "base/host_device.h"

namespace hora::algorithms {

// All-reduce: each rank sends its input to every other rank, then reduces
// all inputs in rank order (0, 1, ..., n-1), so every rank computes the same
// bits whatever order the messages arrived in. `ranks` lists the n ranks in
// rank order; `self` is this rank. Each channel reduces its own part.
template <typename P>
HORA_HOST_DEVICE void directAllReduce(P& p, const int* ranks, int n, int self, Channel channel,
                                      std::size_t count, std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size == 0) return;
  if (n == 1) {
    p.localReduceCopy(part.start, part.start, part.size);
    return;
  }
  for (int k = 0; k < n; ++k)
    if (ranks[k] != self) p.send(ranks[k], part.start, part.size);
  p.recvReduceCopyAll(ranks, n, self, part.start, part.start, part.size);
}

}  // namespace hora::algorithms
