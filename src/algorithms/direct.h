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

// All-to-all: block q of this rank's input goes to block `self` of rank q's
// output. Every send is issued before the first receive, so all ranks' sends
// are under way while they wait; each rank starts with its right-hand
// neighbour so that no rank is every rank's first target.
template <typename P>
HORA_HOST_DEVICE void directAllToAll(P& p, int n, int self, Channel channel, std::size_t count,
                                     std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size == 0) return;
  auto block = [&](int rank) { return static_cast<std::size_t>(rank) * count + part.start; };
  for (int k = 1; k < n; ++k) {
    const int peer = ringMod(self + k, n);
    p.send(peer, block(peer), part.size);
  }
  p.localCopy(block(self), block(self), part.size);
  for (int k = 1; k < n; ++k) {
    const int peer = ringMod(self - k, n);
    p.recv(peer, block(peer), part.size);
  }
}

// Gather: every rank's input lands in block `rank` of the root's output.
template <typename P>
HORA_HOST_DEVICE void directGather(P& p, int n, int self, int root, Channel channel,
                                   std::size_t count, std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size == 0) return;
  if (self != root) {
    p.send(root, part.start, part.size);
    return;
  }
  p.localCopy(part.start, static_cast<std::size_t>(root) * count + part.start, part.size);
  for (int k = 1; k < n; ++k) {
    const int peer = ringMod(root + k, n);
    p.recv(peer, static_cast<std::size_t>(peer) * count + part.start, part.size);
  }
}

// Scatter: block `rank` of the root's input goes to every rank's output.
template <typename P>
HORA_HOST_DEVICE void directScatter(P& p, int n, int self, int root, Channel channel,
                                    std::size_t count, std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size == 0) return;
  if (self != root) {
    p.recv(root, part.start, part.size);
    return;
  }
  for (int k = 1; k < n; ++k) {
    const int peer = ringMod(root + k, n);
    p.send(peer, static_cast<std::size_t>(peer) * count + part.start, part.size);
  }
  p.localCopy(static_cast<std::size_t>(root) * count + part.start, part.start, part.size);
}

}  // namespace hora::algorithms
