// Schedules over windows (one-shot, zero copy): every rank's buffers are
// mapped into every rank, so each rank reads its peers' inputs and writes
// their outputs directly and no byte crosses a FIFO. Each input element is
// read once and each output element written once, the least these
// collectives can move, and each reduced element is computed by exactly one
// rank, so all ranks hold the same bits.
//
// A window primitives type W offers, in elements of the op:
//   reduce(in, outRank, out, n)   every rank's input [in, in + n), reduced in
//                                 rank order, into rank outRank's output
//                                 [out, out + n); outRank == kEveryRank: into
//                                 every rank's output
//   copy(fromRank, in, out, n)    rank fromRank's input [in, in + n) into
//                                 this rank's output [out, out + n)
// The executor agrees with the other ranks that all buffers lie in windows
// before, and that nobody touches them any more after (core/zero_copy.cc).
#pragma once

#include <cstddef>

#include "algorithms/primitives.h"
#include "base/host_device.h"

namespace hora::algorithms {

inline constexpr int kEveryRank = -1;

// Where rank r's share of `count` elements starts: n nearly equal shares,
// each starting on a multiple of `align` elements (streaming stores then
// see the same alignment in each); rankShareStart(count, n, n, align) is
// count.
HORA_HOST_DEVICE inline std::size_t rankShareStart(std::size_t count, int n, int r,
                                                   std::size_t align) {
  const std::size_t ranks = static_cast<std::size_t>(n), at = static_cast<std::size_t>(r);
  const std::size_t even = count / ranks * at + count % ranks * at / ranks;
  return minSize(count, roundUp(even, align));
}

// All-reduce (outRank kEveryRank) or reduce (outRank = the root): this rank
// reduces its share of the elements from every input into the output(s).
template <typename W>
HORA_HOST_DEVICE void windowReduce(W& w, int n, int self, int outRank, Channel channel,
                                   std::size_t count, std::size_t align) {
  const std::size_t begin = rankShareStart(count, n, self, align);
  const std::size_t end = rankShareStart(count, n, self + 1, align);
  const Range part = channelPart(end - begin, channel, align);
  if (part.size > 0) w.reduce(begin + part.start, outRank, begin + part.start, part.size);
}

// Reduce-scatter: this rank reduces block `self` of every input into its
// own output.
template <typename W>
HORA_HOST_DEVICE void windowReduceScatter(W& w, int self, Channel channel, std::size_t count,
                                          std::size_t align) {
  const Range part = channelPart(count, channel, align);
  const std::size_t block = static_cast<std::size_t>(self) * count;
  if (part.size > 0) w.reduce(block + part.start, self, part.start, part.size);
}

// All-gather: this rank copies every rank's input into its own output.
template <typename W>
HORA_HOST_DEVICE void windowAllGather(W& w, int n, Channel channel, std::size_t count,
                                      std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size == 0) return;
  for (int r = 0; r < n; ++r)
    w.copy(r, part.start, static_cast<std::size_t>(r) * count + part.start, part.size);
}

// Broadcast: this rank copies the root's input into its own output.
template <typename W>
HORA_HOST_DEVICE void windowBroadcast(W& w, int root, Channel channel, std::size_t count,
                                      std::size_t align) {
  const Range part = channelPart(count, channel, align);
  if (part.size > 0) w.copy(root, part.start, part.start, part.size);
}

}  // namespace hora::algorithms
