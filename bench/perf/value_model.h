// The data hora-perf feeds a collective, and the results it must produce.
//
// Inputs depend on (rank, index, repetition) only, so every rank can compute
// what any other rank sent, and the expected result of a reduction, without
// communicating. They are small whole numbers chosen so that EVERY partial
// result is exactly representable in the element type, whatever order the
// ranks' contributions are combined in (ring, tree, or any other):
//
//  - copies, min and max: L + 1 values, where every integer up to L is
//    exact in the type (L = 8 for f8e5m2, 16 for f8e4m3, 256 for bfloat16,
//    2048 for half, 2^20 for the wide types): [0, L] for unsigned types,
//    and around zero for the others, so that negative numbers are
//    compared too; different on every rank at each index while n <= L + 1,
//    and never the same array on two ranks;
//  - sum and avg: at most K = min(n, L) ranks contribute at each index (how
//    many is drawn per index), with values in [1, L/K], so no partial sum
//    can exceed L;
//  - prod: values 1 and 2, with at most log2(L) twos at each index.
//
// Integer sums and products therefore never wrap around: a result of all
// ones must stay impossible, since it marks an element never written.
//
// So results are compared exactly, with one exception: floating avg over a
// rank count that is not a small power of two multiplies every input by an
// inexact 1/n (as NCCL does). There, at most two ranks contribute at each
// index, so the result has three roundings whatever the order (two products
// and one sum; adding zeros is exact), and it is compared with the exact
// quotient within the error those three roundings allow.
#pragma once

#include <cstddef>
#include <optional>

#include "nccl.h"

namespace hora::perf {

class ValueModel {
 public:
  // `op` is the reduction, or empty for collectives that only move data.
  ValueModel(ncclDataType_t type, std::optional<ncclRedOp_t> op, int nranks);

  // What `rank` puts at `index` of its send buffer in check repetition `rep`.
  double input(int rank, std::size_t index, int rep) const;

  // The reduction over all ranks of input(rank, index, rep).
  double reduced(std::size_t index, int rep) const;

  // Whether a result element equals the expected value (NaN never does).
  bool matches(double got, double expected) const;

  // The largest |got - expected| accepted for `expected`.
  double tolerance(double expected) const;

 private:
  enum class Pattern { Varied, SmallSum, PowersOfTwo };

  ncclDataType_t type_;
  std::optional<ncclRedOp_t> op_;
  int nranks_;
  Pattern pattern_;
  bool signed_ = false;        // Varied: values around zero, not from zero
  std::size_t limit_;          // L: every integer in [0, L] is exact
  std::size_t activeRanks_;    // SmallSum / PowersOfTwo: contributors per index
  std::size_t largestAddend_;  // SmallSum: values lie in [1, largestAddend_]
  double relativeError_ = 0;   // avg with an inexact 1/n: error bound per unit
  double absoluteError_ = 0;
};

}  // namespace hora::perf
