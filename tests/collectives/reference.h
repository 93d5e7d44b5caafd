// Inputs and expected results of reductions, computed without hora.
//
// Every rank's input is a pure function of (case seed, rank, index), so any
// rank -- a thread or a separate process -- can compute every other rank's
// input, and with it the exact expected result, on its own.
//
// Floating inputs are chosen so that the result does not depend on the order
// of the arithmetic (the ring adds in an order the test does not know):
//   sum, avg, premulsum: k/2 for small integers k, few enough that every
//     partial sum is exact in the format;
//   prod: values in {-2, -1, 0.5, 1, 2} (rarely 0), so products are powers
//     of two (or zeros) -- exact for up to 8 ranks in every format;
//   max, min: any finite pattern except -0 (max(+0, -0) may be either).
// Floating avg is computed by hora as NCCL does, a premulsum by 1/nranks in
// the element type; with a power-of-two rank count that is exact, and the
// reference is the exact sum of x/nranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "element_types.h"

namespace hora_coll_test {

enum class Reduction {
  Sum,
  Prod,
  Max,
  Min,
  Avg,
  PreMulSumDevice,  // ncclRedOpCreatePreMulSum, ncclScalarDevice
  PreMulSumHost,    // ncclRedOpCreatePreMulSum, ncclScalarHostImmediate
};

const std::vector<Reduction>& allReductions();
const char* reductionName(Reduction reduction);
bool isPreMulSum(Reduction reduction);
// The built-in op for Sum..Avg (the premulsum kinds need a created op).
ncclRedOp_t builtInOp(Reduction reduction);
// The premulsum scalar, as a bit pattern of `type` (differs per residence).
std::uint64_t preMulScalarBits(const ElementType& type, Reduction reduction);

// A deterministic 64-bit hash (splitmix64 finaliser).
std::uint64_t mixBits(std::uint64_t value);

// Rank `rank`'s input element `index` for a reduction of `nranks` ranks.
std::uint64_t reductionInputBits(const ElementType& type, Reduction reduction, int nranks,
                                 std::uint64_t seed, int rank, std::size_t index);
// Arbitrary bytes for operations that only move data.
std::uint64_t movedInputBits(const ElementType& type, std::uint64_t seed, int rank,
                             std::size_t index);

// The reduction of `inputs` (one per rank, in rank order) as the library
// must produce it, or nullopt if the exact result is not representable (a
// bug in the test's choice of inputs, reported as such).
std::optional<std::uint64_t> reduceReference(const ElementType& type, Reduction reduction,
                                             const std::vector<std::uint64_t>& inputs);

}  // namespace hora_coll_test
