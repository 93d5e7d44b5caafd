// reduceHostMany: checks the arguments, then hands them to the block loop of
// the fastest instruction set this CPU has (reduce_loops.h), which dispatches
// once on (type, kind).
//
// The block sizes (reduce_many.h) come from hora-bench-reduce-many on a
// 2-core Xeon VM with AVX2: float32 sums of 2 inputs into 2 outputs, one call
// on each core at once, memory traffic in GiB/s (medians of interleaved
// repetitions, ranges over several runs: the machine was shared).
//   Streaming, 32 MiB buffers:
//     64 B: 21-24   128 B: 29-35   256 B: 33-44   512 B: 34-42   1 KiB: 30-44
//     2 KiB: 27-31   4 KiB: 25-33   16 KiB: 28-32
//     For scale: a loop fused by hand for this one case with AVX2 intrinsics
//     38-44; reduceHost into one output, then a streaming copy into the
//     other, 13-22.
//   Ordinary stores, 256 KiB buffers (they stay in the cache):
//     64 B: 31   256 B: 73-79   512 B: 89-102   1 KiB: 88-111   2 KiB: 90-116
//     4 KiB: 91-127   16 KiB: 88-91
// Small blocks pay each block's setup (a call into the loops, their
// remainders) more often. Large blocks run the input loads and the output
// stores in long separate bursts, so that memory serves one kind of request
// at a time; interleaved finely, both stay in flight.
#include "kernels/reduce_many.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "hora/error.h"
#include "kernels/reduce_arguments.h"

namespace hora::kernels {
namespace {

constexpr const char* kCaller = "reduceHostMany";

[[noreturn]] void throwInvalid(const std::string& message) {
  throw Error(ErrorKind::InvalidArgument, std::string(kCaller) + ": " + message);
}

std::string indexed(const char* array, int index) {
  return std::string(array) + "[" + std::to_string(index) + "]";
}

void checkPointer(const void* pointer, const std::string& role, DataType type) {
  if (pointer == nullptr) throwInvalid(role + " is null but count > 0");
  const std::size_t elementSize = dataTypeSize(type);
  if (reinterpret_cast<std::uintptr_t>(pointer) % elementSize != 0) {
    char address[32];
    std::snprintf(address, sizeof(address), "%p", pointer);
    throwInvalid(role + " pointer " + address + " is not aligned to " +
                 std::to_string(elementSize) + " bytes, the size of one " + dataTypeName(type) +
                 " element");
  }
}

bool overlap(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

void checkArrays(void* const* outputs, int numOutputs, const void* const* inputs, int numInputs) {
  if (numInputs < 1) {
    throwInvalid("numInputs is " + std::to_string(numInputs) +
                 ", but a reduction of count > 0 elements needs at least one input");
  }
  if (numOutputs < 1) {
    throwInvalid("numOutputs is " + std::to_string(numOutputs) +
                 ", but a reduction of count > 0 elements needs at least one output");
  }
  if (inputs == nullptr) throwInvalid("the inputs array is null but numInputs > 0");
  if (outputs == nullptr) throwInvalid("the outputs array is null but numOutputs > 0");
}

// The block loop reads every input's block before it writes any output's
// block, so an output may equal an input; a partial overlap would read
// elements a previous block already overwrote. Two outputs that overlap
// would each receive stores meant for the other (and equal outputs point to
// a mistake in the caller's bookkeeping), so both are refused.
void checkOverlaps(void* const* outputs, int numOutputs, const void* const* inputs, int numInputs,
                   std::size_t bytes) {
  for (int j = 0; j < numOutputs; ++j) {
    for (int other = j + 1; other < numOutputs; ++other) {
      if (overlap(outputs[j], outputs[other], bytes)) {
        throwInvalid(indexed("outputs", j) + " and " + indexed("outputs", other) +
                     " overlap (every output must be a separate buffer)");
      }
    }
    for (int k = 0; k < numInputs; ++k) {
      if (outputs[j] != inputs[k] && overlap(outputs[j], inputs[k], bytes)) {
        throwInvalid(indexed("outputs", j) + " partially overlaps " + indexed("inputs", k) +
                     " (an output may only be exactly an input, or apart from it)");
      }
    }
  }
}

void checkManyArguments(const ReduceSpec& spec, void* const* outputs, int numOutputs,
                        const void* const* inputs, int numInputs, std::size_t count) {
  // The type, kind and divisor: checked by the rules every reduction shares
  // (no pointers are looked at with a count of 0).
  checkReduceArguments(kCaller, spec, nullptr, nullptr, nullptr, 0);
  if (count == 0) return;
  checkArrays(outputs, numOutputs, inputs, numInputs);
  for (int k = 0; k < numInputs; ++k) checkPointer(inputs[k], indexed("inputs", k), spec.type);
  for (int j = 0; j < numOutputs; ++j) checkPointer(outputs[j], indexed("outputs", j), spec.type);
  checkOverlaps(outputs, numOutputs, inputs, numInputs, count * dataTypeSize(spec.type));
}

}  // namespace

void reduceHostManyTuned(const ReduceManyTuning& tuning, const ReduceSpec& spec,
                         void* const* outputs, int numOutputs, const void* const* inputs,
                         int numInputs, std::size_t count, bool streaming) {
  if (!hostIsaAvailable(tuning.isa)) {
    throw Error(ErrorKind::InvalidUsage, std::string(kCaller) + ": the " + hostIsaName(tuning.isa) +
                                             " loops are not available on this CPU or build");
  }
  std::size_t blockBytes = tuning.blockBytes;
  if (blockBytes == 0) {
    blockBytes = streaming ? kReduceManyStreamingBlockBytes : kReduceManyCachedBlockBytes;
  } else if (blockBytes % 64 != 0 || blockBytes > detail::kMaxManyBlockBytes) {
    throwInvalid("block size " + std::to_string(blockBytes) +
                 " bytes is not a multiple of 64 in [64, " +
                 std::to_string(detail::kMaxManyBlockBytes) + "]");
  }
  checkManyArguments(spec, outputs, numOutputs, inputs, numInputs, count);
  if (count == 0) return;
  const detail::ManyBuffers buffers{outputs, numOutputs, inputs,    numInputs,
                                    count,   streaming,  blockBytes};
#if HORA_KERNELS_HAVE_AVX2_LOOPS
  if (tuning.isa == HostIsa::Avx2) return detail::reduceManyAvx2(spec, buffers);
#endif
  detail::reduceManyBaseline(spec, buffers);
}

void reduceHostMany(const ReduceSpec& spec, void* const* outputs, int numOutputs,
                    const void* const* inputs, int numInputs, std::size_t count, bool streaming) {
  reduceHostManyTuned(ReduceManyTuning{}, spec, outputs, numOutputs, inputs, numInputs, count,
                      streaming);
}

}  // namespace hora::kernels
