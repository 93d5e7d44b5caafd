// What every schedule in algorithms/ is written against: a "primitives" type
// P that moves elements between this rank and its peers, named by rank. The
// same schedule drives the host executor (CPU threads, core/host_primitives.h),
// a CUDA kernel (compiled by nvcc, see device_schedules.cu) and the recording
// primitives of the schedule tests (tests/algorithms/).
//
// Offsets and sizes are in elements of the operation's input (in) and output
// (out) buffers. Every message a rank sends is received by the peer it names
// with a call of the same size, in the same order per (sender, receiver):
//
//   send(to, i, n)                        to <- pre(in[i..])
//   recv(from, o, n)                      out[o..] <- from
//   recvReduceSend(from, to, i, n)        to <- pre(in[i..]) (+) from
//   recvReduceCopy(from, i, o, n)         out[o..] <- post(pre(in[i..]) (+) from)
//   recvReduceCopySend(from, to, i, o, n) out[o..] <- post(pre(in[i..]) (+) from); to <- out[o..]
//   recvCopySend(from, to, o, n)          out[o..] <- from; to <- out[o..]
//   copySend(to, i, o, n)                 out[o..] <- in[i..]; to <- in[i..]
//   localReduceCopy(i, o, n)              out[o..] <- post(pre(in[i..]))
//   localCopy(i, o, n)                    out[o..] <- in[i..]
//   recvReduceCopyAll(order, k, self, i, o, n)
//       fan in: out[o..] <- post(the reduction, in the order of the k ranks
//       order[0..k), of every listed rank's elements: this rank's (self) are
//       pre(in[i..]), every other rank's arrive from it, one message of n
//       elements each, already pre()-multiplied by its sender)
//
// (+) is the element-wise reduction; pre() is the pre-multiplication of
// PreMulSum and post() the division of integer averages (identity otherwise).
// Sends may be queued: a schedule never assumes a send has been received
// before it returns, so any schedule whose messages match completes.
#pragma once

#include <concepts>
#include <cstddef>

#include "base/host_device.h"

namespace hora::algorithms {

HORA_HOST_DEVICE inline std::size_t minSize(std::size_t a, std::size_t b) { return a < b ? a : b; }
HORA_HOST_DEVICE inline std::size_t roundUp(std::size_t value, std::size_t step) {
  return (value + step - 1) / step * step;
}
HORA_HOST_DEVICE inline int ringMod(int value, int n) { return ((value % n) + n) % n; }

// Channels split one operation: each runs the same schedule on its own share
// of the elements, over its own connections (thread blocks of a kernel on a
// GPU). A schedule loops over the buffer in loops of `count` channels'
// worth; channel `index` takes the index-th part of each loop, so the
// channels progress through the buffer together.
struct Channel {
  int index = 0;
  int count = 1;
};

// A range of elements [start, start + size).
struct Range {
  std::size_t start;
  std::size_t size;
};

// Channel `channel`'s part of a loop of `len` elements: equal parts, each a
// multiple of `align` elements except at the end (some channels may get
// none when the loop is short).
HORA_HOST_DEVICE inline Range channelPart(std::size_t len, Channel channel, std::size_t align) {
  const std::size_t per = roundUp((len + channel.count - 1) / channel.count, align);
  const std::size_t start = minSize(len, static_cast<std::size_t>(channel.index) * per);
  return {start, minSize(len, start + per) - start};
}

// Calls body(start, size) for this channel's part of each loop of `loop`
// elements over [0, count) (parts that are empty are skipped: every rank
// skips the same ones).
template <typename Body>
HORA_HOST_DEVICE void forEachPart(std::size_t count, std::size_t loop, Channel channel,
                                  std::size_t align, Body body) {
  for (std::size_t base = 0; base < count; base += loop) {
    const Range part = channelPart(minSize(loop, count - base), channel, align);
    if (part.size > 0) body(base + part.start, part.size);
  }
}

// The contract above as a concept: every primitives type states
// static_assert(Primitives<Type>), so a missing or mistyped call fails where
// the type is defined, not inside a schedule.
template <typename P>
concept Primitives = requires(P p, int peer, std::size_t offset, const int* order) {
  p.send(peer, offset, offset);
  p.recv(peer, offset, offset);
  p.recvReduceSend(peer, peer, offset, offset);
  p.recvReduceCopy(peer, offset, offset, offset);
  p.recvReduceCopySend(peer, peer, offset, offset, offset);
  p.recvCopySend(peer, peer, offset, offset);
  p.copySend(peer, offset, offset, offset);
  p.localReduceCopy(offset, offset, offset);
  p.localCopy(offset, offset, offset);
  p.recvReduceCopyAll(order, peer, peer, offset, offset, offset);
};

// Where this rank stands on a ring: position `pos` of `nranks`, with
// ranks[p] the user rank at position p. It receives from the rank before it
// and sends to the rank after it.
struct Ring {
  int nranks;
  int pos;
  const int* ranks;

  HORA_HOST_DEVICE int rankAt(int position) const { return ranks[ringMod(position, nranks)]; }
  HORA_HOST_DEVICE int next() const { return rankAt(pos + 1); }
  HORA_HOST_DEVICE int prev() const { return rankAt(pos - 1); }
  HORA_HOST_DEVICE int self() const { return rankAt(pos); }
  // The position of user rank `rank` (0 if it is not on the ring).
  HORA_HOST_DEVICE int positionOf(int rank) const {
    for (int p = 0; p < nranks; ++p)
      if (ranks[p] == rank) return p;
    return 0;
  }
};

}  // namespace hora::algorithms
