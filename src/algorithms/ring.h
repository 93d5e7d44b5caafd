// Ring schedules of the collectives, written once against the primitives of
// algorithms/primitives.h, so the same schedule drives the host executor and,
// compiled by nvcc, a CUDA kernel.
//
// Every schedule walks the buffer in loops: a loop holds `chunk` elements per
// ring step for each channel, and this channel takes its part of each loop
// (channelPart), so every rank's sends of one loop overlap its receives of
// the next, and several channels split one buffer between them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/primitives.h"
#include "base/host_device.h"

namespace hora::algorithms {

// All-reduce: reduce-scatter around the ring, then all-gather of the reduced
// chunks. A channel's part of each loop is cut into nranks chunks (starts
// aligned to `align` elements); after nranks-1 steps this rank holds the
// full reduction of chunk pos+1, and after nranks-1 more every rank holds
// every chunk. Each rank sends 2(n-1)/n of the buffer: the bus-bandwidth
// factor of nccl-tests.
template <typename P>
HORA_HOST_DEVICE void ringAllReduce(P& p, const Ring& ring, Channel channel, std::size_t count,
                                    std::size_t chunk, std::size_t align) {
  const int n = ring.nranks;
  if (n == 1) {
    const Range part = channelPart(count, channel, align);
    if (part.size > 0) p.localReduceCopy(part.start, part.start, part.size);
    return;
  }
  const int next = ring.next(), prev = ring.prev();
  const std::size_t loop = static_cast<std::size_t>(channel.count) * n * chunk;
  forEachPart(count, loop, channel, n * align, [&](std::size_t origin, std::size_t len) {
    const std::size_t per = roundUp((len + n - 1) / n, align);
    auto start = [&](int c) { return origin + minSize(len, static_cast<std::size_t>(c) * per); };
    auto size = [&](int c) {
      return minSize(len, static_cast<std::size_t>(c + 1) * per) -
             minSize(len, static_cast<std::size_t>(c) * per);
    };

    int c = ring.pos;
    p.send(next, start(c), size(c));
    for (int j = 1; j < n - 1; ++j) {
      c = ringMod(ring.pos - j, n);
      p.recvReduceSend(prev, next, start(c), size(c));
    }
    c = ringMod(ring.pos + 1, n);
    p.recvReduceCopySend(prev, next, start(c), start(c), size(c));
    for (int j = 1; j < n - 1; ++j) {
      c = ringMod(ring.pos + 1 - j, n);
      p.recvCopySend(prev, next, start(c), size(c));
    }
    c = ringMod(ring.pos + 2, n);
    p.recv(prev, start(c), size(c));
  });
}

// Reduce-scatter: in holds nranks blocks of `count`; rank r ends with the
// reduction of block r. At step j this rank works on the block of the rank
// j+1 places behind it, so the last step lands on its own block.
template <typename P>
HORA_HOST_DEVICE void ringReduceScatter(P& p, const Ring& ring, Channel channel, std::size_t count,
                                        std::size_t chunk, std::size_t align) {
  const int n = ring.nranks;
  const int next = ring.next(), prev = ring.prev();
  const std::size_t self = static_cast<std::size_t>(ring.self());
  const std::size_t loop = static_cast<std::size_t>(channel.count) * chunk;
  forEachPart(count, loop, channel, align, [&](std::size_t at, std::size_t len) {
    if (n == 1) {
      p.localReduceCopy(at, at, len);
      return;
    }
    auto block = [&](int position) { return static_cast<std::size_t>(ring.rankAt(position)) * count + at; };
    p.send(next, block(ring.pos - 1), len);
    for (int j = 1; j < n - 1; ++j) p.recvReduceSend(prev, next, block(ring.pos - j - 1), len);
    p.recvReduceCopy(prev, self * count + at, at, len);
  });
}

// All-gather: out holds nranks blocks of `count`; rank r's input lands in
// block r everywhere. Each block travels nranks-1 hops around the ring.
template <typename P>
HORA_HOST_DEVICE void ringAllGather(P& p, const Ring& ring, Channel channel, std::size_t count,
                                    std::size_t chunk, std::size_t align) {
  const int n = ring.nranks;
  const int next = ring.next(), prev = ring.prev();
  const std::size_t self = static_cast<std::size_t>(ring.self());
  const std::size_t loop = static_cast<std::size_t>(channel.count) * chunk;
  forEachPart(count, loop, channel, align, [&](std::size_t at, std::size_t len) {
    if (n == 1) {
      p.localCopy(at, self * count + at, len);
      return;
    }
    auto block = [&](int position) { return static_cast<std::size_t>(ring.rankAt(position)) * count + at; };
    p.copySend(next, at, self * count + at, len);
    for (int j = 1; j < n - 1; ++j) p.recvCopySend(prev, next, block(ring.pos - j), len);
    p.recv(prev, block(ring.pos + 1), len);
  });
}

// Broadcast: a pipeline along the ring starting at the root.
template <typename P>
HORA_HOST_DEVICE void ringBroadcast(P& p, const Ring& ring, Channel channel, int root,
                                    std::size_t count, std::size_t chunk, std::size_t align) {
  const int n = ring.nranks;
  const int next = ring.next(), prev = ring.prev();
  const int hop = ringMod(ring.pos - ring.positionOf(root), n);  // 0 at the root
  const std::size_t loop = static_cast<std::size_t>(channel.count) * chunk;
  forEachPart(count, loop, channel, align, [&](std::size_t at, std::size_t len) {
    if (n == 1) p.localCopy(at, at, len);
    else if (hop == 0) p.copySend(next, at, at, len);
    else if (hop < n - 1) p.recvCopySend(prev, next, at, len);
    else p.recv(prev, at, len);
  });
}

// Reduce: a pipeline along the ring that starts just after the root and
// ends at it, each hop adding its own input.
template <typename P>
HORA_HOST_DEVICE void ringReduce(P& p, const Ring& ring, Channel channel, int root,
                                 std::size_t count, std::size_t chunk, std::size_t align) {
  const int n = ring.nranks;
  const int next = ring.next(), prev = ring.prev();
  const int hop = ringMod(ring.pos - ring.positionOf(root) - 1, n);  // n-1 at the root
  const std::size_t loop = static_cast<std::size_t>(channel.count) * chunk;
  forEachPart(count, loop, channel, align, [&](std::size_t at, std::size_t len) {
    if (n == 1) p.localReduceCopy(at, at, len);
    else if (hop == 0) p.send(next, at, len);
    else if (hop < n - 1) p.recvReduceSend(prev, next, at, len);
    else p.recvReduceCopy(prev, at, at, len);
  });
}

// The ring collectives by name, for executors that choose one at run time
// (the host executor per operation, a CUDA kernel per launch).
enum class RingCollective : std::uint32_t { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };

// All-gather and broadcast only copy: they move bytes whatever the element
// type, so an executor may run them all with one byte-typed schedule.
HORA_HOST_DEVICE constexpr bool isCopying(RingCollective collective) {
  return collective == RingCollective::AllGather || collective == RingCollective::Broadcast;
}

// kCopies false leaves the copying collectives' schedules out, for a CUDA
// kernel that never runs them (device/ring_kernel.cuh): each kernel is
// compiled per element type and reduction, and those schedules were a third
// of their compile time. A caller that passes a copying collective then
// runs nothing, so it must not (isCopying). Inlined into each kernel,
// whose primitives then stay in registers.
template <bool kCopies = true, typename P>
HORA_HOST_DEVICE HORA_DEVICE_INLINE void runRing(P& p, RingCollective collective, const Ring& ring, Channel channel, int root,
                              std::size_t count, std::size_t chunk, std::size_t align) {
  switch (collective) {
    case RingCollective::AllReduce: return ringAllReduce(p, ring, channel, count, chunk, align);
    case RingCollective::ReduceScatter: return ringReduceScatter(p, ring, channel, count, chunk, align);
    case RingCollective::Reduce: return ringReduce(p, ring, channel, root, count, chunk, align);
    case RingCollective::AllGather:
      if constexpr (kCopies) ringAllGather(p, ring, channel, count, chunk, align);
      return;
    case RingCollective::Broadcast:
      if constexpr (kCopies) ringBroadcast(p, ring, channel, root, count, chunk, align);
      return;
  }
}

}  // namespace hora::algorithms
