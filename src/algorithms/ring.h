// Ring schedules of the collectives, written once against a "primitives"
// type, so the same schedule drives the CPU executor (host memory, one thread
// per rank) and, compiled by nvcc, a CUDA kernel.
//
// A primitives type P moves data between this rank, the previous rank on the
// ring (it receives from it) and the next one (it sends to it). Offsets and
// sizes are in elements of the input (in) and output (out) buffers; every
// call on one rank is matched by the corresponding call on its ring
// neighbours, with the same size:
//
//   send(i, n)                      next <- pre(in[i..])
//   recv(o, n)                      out[o..] <- prev
//   recvReduceSend(i, n)            next <- pre(in[i..]) (+) prev
//   recvReduceCopy(i, o, n)         out[o..] <- post(pre(in[i..]) (+) prev)
//   recvReduceCopySend(i, o, n)     out[o..] <- post(pre(in[i..]) (+) prev); next <- out[o..]
//   recvCopySend(o, n)              out[o..] <- prev; next <- out[o..]
//   copySend(i, o, n)               out[o..] <- in[i..]; next <- in[i..]
//   localReduceCopy(i, o, n)        out[o..] <- post(pre(in[i..]))   (a ring of one)
//   localCopy(i, o, n)              out[o..] <- in[i..]              (a ring of one)
//
// (+) is the reduction; pre() is the pre-multiplication of PreMulSum and post()
// the division of integer averages (identity otherwise).
//
// Large buffers are processed in loops of at most `chunk` elements per ring
// step, so every rank's sends of one loop overlap its receives of the next.
#pragma once

#include <cstddef>

#include "base/host_device.h"

namespace hora::algorithms {

// Where this rank stands on a ring: position `pos` of `nranks`, with
// ranks[p] the user rank at position p.
struct Ring {
  int nranks;
  int pos;
  const int* ranks;

  HORA_HOST_DEVICE int rankAt(int position) const {
    int p = position % nranks;
    return ranks[p < 0 ? p + nranks : p];
  }
};

HORA_HOST_DEVICE inline std::size_t minSize(std::size_t a, std::size_t b) { return a < b ? a : b; }
HORA_HOST_DEVICE inline int ringMod(int value, int n) { return ((value % n) + n) % n; }

// All-reduce: reduce-scatter around the ring, then all-gather of the reduced
// chunks. Per loop, the loop's elements are cut into nranks chunks; after
// nranks-1 steps this rank holds the full reduction of chunk pos+1, and
// after nranks-1 more every rank holds every chunk. Each rank sends
// 2(n-1)/n of the buffer: the bus-bandwidth factor of nccl-tests.
template <typename P>
HORA_HOST_DEVICE void ringAllReduce(P& p, const Ring& ring, std::size_t count, std::size_t chunk,
                                    std::size_t align) {
  const int n = ring.nranks;
  if (n == 1) {
    p.localReduceCopy(0, 0, count);
    return;
  }
  const std::size_t loop = static_cast<std::size_t>(n) * chunk;
  for (std::size_t base = 0; base < count; base += loop) {
    const std::size_t len = minSize(loop, count - base);
    // Chunk size rounded up to `align` elements keeps chunk starts aligned.
    std::size_t per = (len + n - 1) / n;
    per = (per + align - 1) / align * align;
    auto start = [&](int c) { return minSize(len, static_cast<std::size_t>(c) * per); };
    auto size = [&](int c) { return minSize(len, static_cast<std::size_t>(c + 1) * per) - start(c); };

    int c = ring.pos;
    p.send(base + start(c), size(c));
    for (int j = 1; j < n - 1; ++j) {
      c = ringMod(ring.pos - j, n);
      p.recvReduceSend(base + start(c), size(c));
    }
    c = ringMod(ring.pos + 1, n);
    p.recvReduceCopySend(base + start(c), base + start(c), size(c));
    for (int j = 1; j < n - 1; ++j) {
      c = ringMod(ring.pos + 1 - j, n);
      p.recvCopySend(base + start(c), size(c));
    }
    c = ringMod(ring.pos + 2, n);
    p.recv(base + start(c), size(c));
  }
}

// Reduce-scatter: in holds nranks blocks of `count`; rank r ends with the
// reduction of block r. At step j this rank works on the block of the rank
// j+1 places behind it, so the last step lands on its own block.
template <typename P>
HORA_HOST_DEVICE void ringReduceScatter(P& p, const Ring& ring, std::size_t count, std::size_t chunk) {
  const int n = ring.nranks;
  const std::size_t self = static_cast<std::size_t>(ring.rankAt(ring.pos));
  for (std::size_t base = 0; base < count; base += chunk) {
    const std::size_t len = minSize(chunk, count - base);
    if (n == 1) {
      p.localReduceCopy(base, base, len);
      continue;
    }
    auto block = [&](int position) { return static_cast<std::size_t>(ring.rankAt(position)) * count + base; };
    p.send(block(ring.pos - 1), len);
    for (int j = 1; j < n - 1; ++j) p.recvReduceSend(block(ring.pos - j - 1), len);
    p.recvReduceCopy(self * count + base, base, len);
  }
}

// All-gather: out holds nranks blocks of `count`; rank r's input lands in
// block r everywhere. Each block travels nranks-1 hops around the ring.
template <typename P>
HORA_HOST_DEVICE void ringAllGather(P& p, const Ring& ring, std::size_t count, std::size_t chunk) {
  const int n = ring.nranks;
  const std::size_t self = static_cast<std::size_t>(ring.rankAt(ring.pos));
  for (std::size_t base = 0; base < count; base += chunk) {
    const std::size_t len = minSize(chunk, count - base);
    if (n == 1) {
      p.localCopy(base, self * count + base, len);
      continue;
    }
    auto block = [&](int position) { return static_cast<std::size_t>(ring.rankAt(position)) * count + base; };
    p.copySend(base, self * count + base, len);
    for (int j = 1; j < n - 1; ++j) p.recvCopySend(block(ring.pos - j), len);
    p.recv(block(ring.pos + 1), len);
  }
}

// Broadcast: a pipeline along the ring starting at the root's position.
template <typename P>
HORA_HOST_DEVICE void ringBroadcast(P& p, const Ring& ring, int rootPos, std::size_t count,
                                    std::size_t chunk) {
  const int n = ring.nranks;
  const int hop = ringMod(ring.pos - rootPos, n);  // 0 at the root
  for (std::size_t base = 0; base < count; base += chunk) {
    const std::size_t len = minSize(chunk, count - base);
    if (n == 1) p.localCopy(base, base, len);
    else if (hop == 0) p.copySend(base, base, len);
    else if (hop < n - 1) p.recvCopySend(base, len);
    else p.recv(base, len);
  }
}

// Reduce: a pipeline along the ring that starts just after the root and
// ends at it, each hop adding its own input.
template <typename P>
HORA_HOST_DEVICE void ringReduce(P& p, const Ring& ring, int rootPos, std::size_t count,
                                 std::size_t chunk) {
  const int n = ring.nranks;
  const int hop = ringMod(ring.pos - rootPos - 1, n);  // n-1 at the root
  for (std::size_t base = 0; base < count; base += chunk) {
    const std::size_t len = minSize(chunk, count - base);
    if (n == 1) p.localReduceCopy(base, base, len);
    else if (hop == 0) p.send(base, len);
    else if (hop < n - 1) p.recvReduceSend(base, len);
    else p.recvReduceCopy(base, base, len);
  }
}

}  // namespace hora::algorithms
