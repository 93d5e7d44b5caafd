#include "reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace hora_coll_test {

const std::vector<Reduction>& allReductions() {
  static const std::vector<Reduction> all = {Reduction::Sum,           Reduction::Prod,
                                             Reduction::Max,           Reduction::Min,
                                             Reduction::Avg,           Reduction::PreMulSumDevice,
                                             Reduction::PreMulSumHost};
  return all;
}

const char* reductionName(Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum: return "sum";
    case Reduction::Prod: return "prod";
    case Reduction::Max: return "max";
    case Reduction::Min: return "min";
    case Reduction::Avg: return "avg";
    case Reduction::PreMulSumDevice: return "premulsum(device scalar)";
    case Reduction::PreMulSumHost: return "premulsum(host scalar)";
  }
  return "?";
}

bool isPreMulSum(Reduction reduction) {
  return reduction == Reduction::PreMulSumDevice || reduction == Reduction::PreMulSumHost;
}

ncclRedOp_t builtInOp(Reduction reduction) {
  switch (reduction) {
    case Reduction::Sum: return ncclSum;
    case Reduction::Prod: return ncclProd;
    case Reduction::Max: return ncclMax;
    case Reduction::Min: return ncclMin;
    case Reduction::Avg: return ncclAvg;
    default: throw std::invalid_argument("premulsum has no built-in op");
  }
}

std::uint64_t preMulScalarBits(const ElementType& type, Reduction reduction) {
  const bool device = reduction == Reduction::PreMulSumDevice;
  switch (type.family) {
    case Family::Signed: return static_cast<std::uint64_t>(device ? -3 : 7) & type.mask();
    case Family::Unsigned: return static_cast<std::uint64_t>(device ? 3 : 250) & type.mask();
    case Family::Floating: return *encodeExact(type, device ? 2.0 : 0.5);
  }
  return 0;
}

std::uint64_t mixBits(std::uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

namespace {
std::uint64_t elementHash(std::uint64_t seed, int rank, std::size_t index) {
  return mixBits(seed ^ mixBits((static_cast<std::uint64_t>(rank) << 48) ^ index));
}

// A finite pattern other than -0, for max/min.
std::uint64_t finiteBits(const ElementType& type, std::uint64_t hash) {
  const std::uint64_t negativeZero = 1ull << (type.bits() - 1);
  for (;;) {
    std::uint64_t bits = hash & type.mask();
    if (isFiniteBits(type, bits) && bits != negativeZero) return bits;
    hash = mixBits(hash);
  }
}

// k/2 with |k| small enough that n such values, and every partial sum of
// them (also after scaling by a power of two), are exact in the format.
// (Written for speed: the 64 MiB case draws tens of millions of these.)
std::uint64_t smallHalfInteger(const ElementType& type, int nranks, std::uint64_t hash) {
  const std::int64_t limit = std::int64_t{1} << std::min(type.mantissaBits + 1, 12);
  const std::int64_t k = std::max<std::int64_t>(1, limit / nranks);
  // A uniform pick in [-k, k] by multiply-shift (no division).
  const auto pick = static_cast<std::int64_t>(((hash >> 32) * static_cast<std::uint64_t>(2 * k + 1)) >> 32);
  const double value = static_cast<double>(pick - k) / 2;
  if (type.id == ncclFloat32) return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if (type.id == ncclFloat64) return std::bit_cast<std::uint64_t>(value);
  return *encodeExact(type, value);
}

std::uint64_t powerOfTwoFactor(const ElementType& type, std::uint64_t hash) {
  static const double factors[] = {-2, -1, 0.5, 1, 2, -1, 2, 0.5};
  const double value = (hash >> 8) % 64 == 0 ? 0.0 : factors[hash % 8];
  return *encodeExact(type, value);
}
}  // namespace

std::uint64_t reductionInputBits(const ElementType& type, Reduction reduction, int nranks,
                                 std::uint64_t seed, int rank, std::size_t index) {
  const std::uint64_t hash = elementHash(seed, rank, index);
  if (!type.isFloating()) return hash & type.mask();  // full range: exercises wraparound
  switch (reduction) {
    case Reduction::Prod: return powerOfTwoFactor(type, hash);
    case Reduction::Max:
    case Reduction::Min: return finiteBits(type, hash);
    default: return smallHalfInteger(type, nranks, hash);
  }
}

std::uint64_t movedInputBits(const ElementType& type, std::uint64_t seed, int rank,
                             std::size_t index) {
  return elementHash(seed, rank, index) & type.mask();
}

namespace {
std::uint64_t reduceIntegers(const ElementType& type, Reduction reduction,
                             const std::vector<std::uint64_t>& inputs) {
  // Unsigned 64-bit arithmetic is arithmetic modulo 2^64, hence modulo 2^bits
  // after masking: the wraparound every integer type must show.
  const std::uint64_t mask = type.mask();
  const bool isSigned = type.family == Family::Signed;
  auto less = [&](std::uint64_t a, std::uint64_t b) {
    return isSigned ? signedValue(type, a) < signedValue(type, b) : a < b;
  };
  std::uint64_t acc = inputs[0];
  const std::uint64_t scalar = isPreMulSum(reduction) ? preMulScalarBits(type, reduction) : 0;
  if (isPreMulSum(reduction)) acc = acc * scalar;
  for (std::size_t r = 1; r < inputs.size(); ++r) {
    const std::uint64_t x = inputs[r];
    switch (reduction) {
      case Reduction::Sum:
      case Reduction::Avg: acc += x; break;
      case Reduction::Prod: acc *= x; break;
      case Reduction::Max: acc = less(acc, x) ? x : acc; break;
      case Reduction::Min: acc = less(x, acc) ? x : acc; break;
      case Reduction::PreMulSumDevice:
      case Reduction::PreMulSumHost: acc += x * scalar; break;
    }
    acc &= mask;
  }
  acc &= mask;
  if (reduction == Reduction::Avg) {
    // The wrapped sum, divided with truncation toward zero.
    const auto n = static_cast<std::int64_t>(inputs.size());
    if (isSigned) acc = static_cast<std::uint64_t>(signedValue(type, acc) / n) & mask;
    else acc = acc / static_cast<std::uint64_t>(n);
  }
  return acc;
}

std::optional<std::uint64_t> reduceFloats(const ElementType& type, Reduction reduction,
                                          const std::vector<std::uint64_t>& inputs) {
  if (reduction == Reduction::Max || reduction == Reduction::Min) {
    std::uint64_t best = inputs[0];
    for (std::uint64_t x : inputs) {
      const double a = decodeFloat(type, best), b = decodeFloat(type, x);
      if (reduction == Reduction::Max ? b > a : b < a) best = x;
    }
    return best;
  }
  const double n = static_cast<double>(inputs.size());
  const double scalar =
      isPreMulSum(reduction) ? decodeFloat(type, preMulScalarBits(type, reduction)) : 1.0;
  double acc = reduction == Reduction::Prod ? 1.0 : 0.0;
  for (std::uint64_t bits : inputs) {
    const double x = decodeFloat(type, bits);
    switch (reduction) {
      case Reduction::Sum: acc += x; break;
      case Reduction::Prod: acc *= x; break;
      case Reduction::Avg: acc += x / n; break;
      default: acc += x * scalar; break;
    }
  }
  return encodeExact(type, acc);
}
}  // namespace

std::optional<std::uint64_t> reduceReference(const ElementType& type, Reduction reduction,
                                             const std::vector<std::uint64_t>& inputs) {
  if (inputs.empty()) throw std::invalid_argument("a reduction needs at least one input");
  if (type.isFloating()) return reduceFloats(type, reduction, inputs);
  return reduceIntegers(type, reduction, inputs);
}

}  // namespace hora_coll_test
