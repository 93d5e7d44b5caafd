// A complete reduction of many host buffers into many host buffers, in one
// pass over memory: the arithmetic of the zero-copy all-reduce between ranks
// on one host, where every rank has mapped every rank's buffers. Each rank
// reduces its share of the elements across all ranks' inputs and writes the
// result straight into all ranks' outputs, so every input byte is read once
// and every output byte written once.
#pragma once

#include <cstddef>

#include "kernels/copy_host.h"  // streamingFence
#include "kernels/reduce_host.h"
#include "kernels/reduce_isa.h"

namespace hora::kernels {

// For i in [0, count):
//   acc = pre(inputs[0][i]);
//   acc = combine(pre(inputs[k][i]), acc) for k = 1 .. numInputs-1;
//   acc = post(acc)  (SumPostDiv's division: this is a complete reduction);
//   outputs[j][i] = acc for every j.
// Element semantics are reduceHost's (reduce_host.h), and so is the rounding:
// the result has the bits of the chain
//   reduceHost(spec, t, inputs[0], nullptr, count, numInputs == 1);
//   reduceHost(spec, t, inputs[k], t, count, k == numInputs - 1)  for k = 1..
// (up to which NaN, where NaNs meet), then copied to every output.
//
// streaming: the outputs are written with non-temporal stores, which bypass
// the cache (see copy_host.h): for outputs larger than the cache that nobody
// reads soon. Call streamingFence() before another thread reads them.
//
// Aliasing: an output may be exactly one of the inputs (in place); outputs
// must not overlap each other, nor partially overlap an input. Inputs may
// overlap each other freely. Pointers need only the element type's natural
// alignment, each its own.
//
// Throws hora::Error(InvalidArgument) for an invalid type or kind, a
// SumPostDiv divisor of 0, and, when count > 0: fewer than one input or
// output, a null or misaligned pointer, overlapping outputs, an output
// partially overlapping an input. count == 0 does nothing.
void reduceHostMany(const ReduceSpec& spec, void* const* outputs, int numOutputs,
                    const void* const* inputs, int numInputs, std::size_t count, bool streaming);

// The size of the blocks reduceHostMany reduces at a time, by the kind of
// stores (reduce_many.cc says how they were chosen). Streaming stores go to
// memory, and small blocks keep loads and stores finely interleaved;
// ordinary stores mostly stay in the cache, and larger blocks spend less on
// each block's setup.
inline constexpr std::size_t kReduceManyStreamingBlockBytes = 512;
inline constexpr std::size_t kReduceManyCachedBlockBytes = 4096;

// How reduceHostMany runs: tests and benchmarks compare the choices.
struct ReduceManyTuning {
  HostIsa isa = bestHostIsa();
  // 0: the default for the kind of stores (above). Otherwise a multiple of
  // 64 bytes (one cache line), at most 16 KiB.
  std::size_t blockBytes = 0;
};

// reduceHostMany with a chosen instruction set and block size; throws
// InvalidUsage if `tuning.isa` is not available here, InvalidArgument for a
// block size other than 0 that is not a multiple of 64 in [64, 16 KiB].
void reduceHostManyTuned(const ReduceManyTuning& tuning, const ReduceSpec& spec,
                         void* const* outputs, int numOutputs, const void* const* inputs,
                         int numInputs, std::size_t count, bool streaming);

}  // namespace hora::kernels
