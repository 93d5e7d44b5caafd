#include "value_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "data_types.h"

namespace hora::perf {
namespace {

// splitmix64's finaliser: every bit of x moves every bit of the result.
std::uint64_t scramble(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value of the whole index and the repetition, with no period: a block
// of the result that lands in the wrong place, however far, holds other
// values than the ones expected there.
std::uint64_t indexHash(std::size_t index, int rep) {
  return scramble(static_cast<std::uint64_t>(index) * 0x100000001b3ull + static_cast<std::uint64_t>(rep));
}

// Values in [0, modulus) that differ between the ranks at every index
// while n <= modulus: what copies need to tell ranks' blocks apart (37 has
// no factor in common with any type's modulus, so the first `modulus`
// ranks cover every residue). Ranks `modulus` or more apart must share
// values at every index; each further block of ranks is shifted by its own
// drawn offset, so that no two ranks' arrays are the same.
std::uint64_t distinctPerRank(int rank, std::size_t index, int rep, std::uint64_t modulus) {
  const auto r = static_cast<std::uint64_t>(rank);
  const std::uint64_t block = r / modulus;
  const std::uint64_t blockOffset = block == 0 ? 0 : scramble(indexHash(index, rep) + block) % modulus;
  return (indexHash(index, rep) % modulus + r * 37 + blockOffset) % modulus;
}

// [0, L] onto values around zero for types that have negative numbers, so
// that a signed type reduced as unsigned shows in min and max:
// [-L/2 - 1, L/2] without -1, which in a signed integer is the all-ones
// pattern that marks an element never written (poisonBuffer).
double centred(std::uint64_t value, std::size_t limit) {
  const double shifted = static_cast<double>(value) - static_cast<double>(limit / 2);
  return shifted <= -1.0 ? shifted - 1.0 : shifted;
}

// Values in [0, modulus) drawn afresh for every rank, index and repetition:
// their sum over ranks varies from index to index even where the ranks
// would cover every residue (a rank term that is a permutation would give
// every index the same sum, and no misplaced element would show).
std::uint64_t drawn(int rank, std::size_t index, int rep, std::uint64_t modulus) {
  return scramble(indexHash(index, rep) ^ static_cast<std::uint64_t>(rank) * 0xd6e8feb86659fd93ull) % modulus;
}

// Whether `rank` is one of the `active` ranks that contribute at `index`:
// a window of consecutive ranks that slides with the index, so every rank
// contributes somewhere in any run of n elements.
bool isActive(int rank, std::size_t index, int rep, int nranks, std::size_t active) {
  const auto n = static_cast<std::uint64_t>(nranks);
  return (static_cast<std::uint64_t>(rank) + index % n + static_cast<std::uint64_t>(rep)) % n < active;
}

// How many ranks contribute to the sum at `index`: 1 to `most`, drawn, so
// that sums vary from index to index even where every contribution is 1
// (fp8 over as many ranks as its exact range).
std::size_t activeAt(std::size_t index, int rep, std::size_t most) {
  return 1 + scramble(indexHash(index, rep) ^ 0x5bd1e995u) % most;
}

}  // namespace

ValueModel::ValueModel(ncclDataType_t type, std::optional<ncclRedOp_t> op, int nranks)
    : type_(type), op_(op), nranks_(nranks) {
  const DataTypeInfo& info = dataTypeInfo(type);
  limit_ = static_cast<std::size_t>(info.exactLimit);
  const auto n = static_cast<std::size_t>(nranks);
  // Floating avg multiplies each input by 1/n, then sums. When n is a power
  // of two up to 64, 1/n and every v/n are exact even in fp8, and so is the
  // average; otherwise see below.
  const bool floating = info.valueClass == ValueClass::Floating;
  const bool inexactAverage = op && *op == ncclAvg && floating && !(std::has_single_bit(n) && n <= 64);
  if (!op || *op == ncclMin || *op == ncclMax) {
    pattern_ = Pattern::Varied;
    signed_ = info.valueClass != ValueClass::UnsignedInteger;
  } else if (*op == ncclProd) {
    pattern_ = Pattern::PowersOfTwo;
    activeRanks_ = std::min<std::size_t>(n, std::bit_width(limit_) - 1);  // floor(log2 L) twos
  } else {
    pattern_ = Pattern::SmallSum;
    // Two contributors bound the roundings of an inexact average to three.
    activeRanks_ = std::min(n, inexactAverage ? std::size_t{2} : limit_);
    largestAddend_ = limit_ / activeRanks_;
  }

  if (inexactAverage) {
    // result = round(round(a * s) + round(b * s)) with s = round(1/n): the
    // scalar's own error (known exactly) and three roundings of at most
    // half a unit in the last place (relative u), or of half the smallest
    // subnormal where a product falls below the normal range. Summing
    // first and dividing once (another way to average) stays within it.
    unsigned char scalar[8];
    storeElement(type, scalar, 0, 1.0 / static_cast<double>(n));
    const double scalarError = std::fabs(loadElement(type, scalar, 0) * static_cast<double>(n) - 1.0);
    const double unitRoundoff = std::ldexp(1.0, -(info.mantissaBits + 1));
    // (1 + scalarError)(1 + u)^3 - 1, expanded so that it does not round to
    // zero in double when u is double's own roundoff.
    const double u = unitRoundoff;
    const double threeRoundings = 3 * u + 3 * u * u + u * u * u;
    relativeError_ = scalarError + (1.0 + scalarError) * threeRoundings;
    absoluteError_ = 2.0 * info.smallestSubnormal;
  }
}

double ValueModel::input(int rank, std::size_t index, int rep) const {
  switch (pattern_) {
    case Pattern::Varied: {
      const std::uint64_t value = distinctPerRank(rank, index, rep, limit_ + 1);
      return signed_ ? centred(value, limit_) : static_cast<double>(value);
    }
    case Pattern::SmallSum:
      if (!isActive(rank, index, rep, nranks_, activeAt(index, rep, activeRanks_))) return 0.0;
      return 1.0 + static_cast<double>(drawn(rank, index, rep, largestAddend_));
    case Pattern::PowersOfTwo:
      if (!isActive(rank, index, rep, nranks_, activeRanks_)) return 1.0;
      return drawn(rank, index, rep, 3) != 0 ? 2.0 : 1.0;
  }
  return 0.0;
}

double ValueModel::reduced(std::size_t index, int rep) const {
  const ncclRedOp_t op = op_.value_or(ncclSum);
  double result = input(0, index, rep);
  for (int rank = 1; rank < nranks_; ++rank) {
    const double value = input(rank, index, rep);
    switch (op) {
      case ncclProd: result *= value; break;
      case ncclMax: result = std::max(result, value); break;
      case ncclMin: result = std::min(result, value); break;
      default: result += value; break;  // sum and avg
    }
  }
  if (op == ncclAvg) {
    // Integer avg divides the exact sum, truncating (all sums are >= 0).
    const bool integer = dataTypeInfo(type_).valueClass != ValueClass::Floating;
    result = integer ? std::floor(result / nranks_) : result / nranks_;
  }
  return result;
}

double ValueModel::tolerance(double expected) const {
  return relativeError_ * std::fabs(expected) + absoluteError_;
}

bool ValueModel::matches(double got, double expected) const {
  return std::fabs(got - expected) <= tolerance(expected);
}

}  // namespace hora::perf
