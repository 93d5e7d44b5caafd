// Element-wise reductions on host memory: the arithmetic of every collective
// that runs on CPU threads. One call reduces one slice; the ring schedules
// call it once per chunk, so dispatch on (type, op) happens per call, never
// per element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/types.h"

namespace hora::kernels {

// What a reduction does to each element. The API's ops map onto these:
//   Sum/Prod/Max/Min  -> the same kind
//   Avg (floating)    -> PreMulSum with scalar 1/nranks (as NCCL does)
//   Avg (integer)     -> SumPostDiv with divisor nranks
//   ncclRedOpCreatePreMulSum handles -> PreMulSum with the user's scalar
enum class ReduceKind : std::uint8_t { Sum, Prod, Max, Min, PreMulSum, SumPostDiv };

struct ReduceSpec {
  DataType type = DataType::Float32;
  ReduceKind kind = ReduceKind::Sum;
  // PreMulSum: the scalar in the element type's own representation
  // (e.g. the 2 bytes of a half, the 4 bytes of an int32), little-endian in
  // the low bytes. SumPostDiv: the divisor as an unsigned integer.
  std::uint64_t scalarBits = 0;
  // PreMulSum whose scalar the program left in memory to be read when the
  // operation runs (ncclScalarDevice): its address, and scalarBits is
  // unused. A kernel reads it there, after whatever the stream did before;
  // a host operation reads it as it starts (Communicator::runOps). The
  // functions below take the scalar in scalarBits only.
  const void* scalarAt = nullptr;
};

// For i in [0, count):
//   remote != nullptr: dst[i] = combine(pre(local[i]), remote[i])
//   remote == nullptr: dst[i] = pre(local[i])
//   and, when finalize is true, dst[i] = post(dst[i]) afterwards.
// pre() multiplies by the scalar for PreMulSum and is the identity otherwise;
// post() divides by the divisor for SumPostDiv and is the identity otherwise.
// dst may equal local or remote (in-place); other overlaps are not allowed.
// Pointers need only the element type's natural alignment.
//
// Element semantics are those of kernels/reduce_ops.h: float16, bfloat16 and
// fp8 compute in float and round once to the type (fp8 saturating); integers
// wrap modulo 2^bits and divide truncating toward zero; floating Max/Min
// return the number where one operand is NaN, as NCCL's kernels do (NaN
// where both are; which NaN is unspecified).
// Throws hora::Error(InvalidArgument) for an invalid type or kind (naming the
// value), a SumPostDiv divisor of 0, and, when count > 0, null, misaligned or
// partially overlapping pointers. count == 0 does nothing.
// Runs the loops of the fastest instruction set the CPU has (reduce_isa.h);
// every instruction set gives the same results (up to which NaN).
void reduceHost(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                std::size_t count, bool finalize);

// reduceHost without its argument checks, for a caller that checked the
// arguments of a whole operation once (reduceHost, or checkReduceArguments in
// kernels/reduce_arguments.h) and then reduces it slice by slice: a slice of
// valid arguments (the same spec, every pointer advanced by the same whole
// number of elements, a count no larger than what is left) is valid itself,
// so checking every slice again only repeats work.
// Preconditions, the caller's to keep, with undefined behaviour if broken
// (nothing is thrown): every condition reduceHost throws for holds. Results
// are bit for bit those of reduceHost on the same arguments.
void reduceHostUnchecked(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                         std::size_t count, bool finalize);

}  // namespace hora::kernels
