// Reference models of the narrow floating-point formats, written from their
// definitions and deliberately unlike src/kernels/dtypes.h: values are
// computed field by field in double with std::ldexp, and rounding searches
// the sorted table of every finite value for the nearest one, instead of
// manipulating float bit patterns.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace hora::kernels::testing {

struct FormatModel {
  const char* name;
  int exponentBits;
  int mantissaBits;
  int bias;
  // IEEE-like: the all-ones exponent is inf (mantissa 0) or NaN. Otherwise
  // (e4m3) only the all-ones exponent with the all-ones mantissa is NaN.
  bool ieeeSpecials;
  // Overflow gives the largest finite value (fp8) instead of infinity.
  bool saturates;

  int totalBits() const { return 1 + exponentBits + mantissaBits; }
  std::uint32_t patternCount() const { return 1u << totalBits(); }
  std::uint32_t signBit() const { return 1u << (exponentBits + mantissaBits); }
  std::uint32_t exponentField(std::uint32_t bits) const {
    return (bits >> mantissaBits) & ((1u << exponentBits) - 1u);
  }
  std::uint32_t mantissaField(std::uint32_t bits) const {
    return bits & ((1u << mantissaBits) - 1u);
  }
  bool isNan(std::uint32_t bits) const {
    const std::uint32_t allOnes = (1u << exponentBits) - 1u;
    if (ieeeSpecials) return exponentField(bits) == allOnes && mantissaField(bits) != 0;
    return exponentField(bits) == allOnes && mantissaField(bits) == (1u << mantissaBits) - 1u;
  }
  bool isInfinity(std::uint32_t bits) const {
    const std::uint32_t allOnes = (1u << exponentBits) - 1u;
    return ieeeSpecials && exponentField(bits) == allOnes && mantissaField(bits) == 0;
  }

  double decode(std::uint32_t bits) const {
    const double sign = (bits & signBit()) != 0 ? -1.0 : 1.0;
    if (isNan(bits)) return std::numeric_limits<double>::quiet_NaN();
    if (isInfinity(bits)) return sign * std::numeric_limits<double>::infinity();
    const int exponent = static_cast<int>(exponentField(bits));
    const double mantissa = static_cast<double>(mantissaField(bits));
    if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissaBits);
    return sign * std::ldexp(1.0 + std::ldexp(mantissa, -mantissaBits), exponent - bias);
  }

  // Non-negative finite patterns in increasing order of value (for these
  // formats that is increasing order of the pattern).
  std::vector<std::uint32_t> nonNegativeFinitePatterns() const {
    std::vector<std::uint32_t> patterns;
    for (std::uint32_t bits = 0; bits < signBit(); ++bits) {
      if (!isNan(bits) && !isInfinity(bits)) patterns.push_back(bits);
    }
    return patterns;
  }
};

inline const FormatModel kFloat16Model{"float16", 5, 10, 15, true, false};
inline const FormatModel kBfloat16Model{"bfloat16", 8, 7, 127, true, false};
inline const FormatModel kE4m3Model{"fp8_e4m3", 4, 3, 7, false, true};
inline const FormatModel kE5m2Model{"fp8_e5m2", 5, 2, 15, true, true};

// Rounds a double to the format, to nearest with ties to the even pattern.
// Returns the bit pattern; for NaN input, some NaN pattern.
class ReferenceRounder {
 public:
  explicit ReferenceRounder(const FormatModel& format)
      : format_(format), patterns_(format.nonNegativeFinitePatterns()) {
    for (std::uint32_t bits : patterns_) values_.push_back(format.decode(bits));
  }

  std::uint32_t round(double value) const {
    if (std::isnan(value)) return nanPattern();
    const std::uint32_t sign = std::signbit(value) ? format_.signBit() : 0u;
    const double magnitude = std::fabs(value);
    const double largest = values_.back();
    if (magnitude > largest) {
      if (format_.saturates) return sign | patterns_.back();
      // IEEE: overflow happens where the value would round past the largest
      // finite value to the next power of two (the largest finite value
      // has an odd mantissa, so the tie goes up to infinity).
      const double nextPowerOfTwo = std::ldexp(1.0, std::ilogb(largest) + 1);
      const double midpoint = (largest + nextPowerOfTwo) / 2;
      return sign | (magnitude >= midpoint ? infinityPattern() : patterns_.back());
    }
    // First value >= magnitude; compare with its predecessor.
    const auto above = std::lower_bound(values_.begin(), values_.end(), magnitude);
    const std::size_t upper = static_cast<std::size_t>(above - values_.begin());
    if (values_[upper] == magnitude || upper == 0) return sign | patterns_[upper];
    const std::size_t lower = upper - 1;
    const double distanceDown = magnitude - values_[lower];
    const double distanceUp = values_[upper] - magnitude;
    std::size_t chosen;
    if (distanceDown < distanceUp) {
      chosen = lower;
    } else if (distanceUp < distanceDown) {
      chosen = upper;
    } else {
      chosen = (patterns_[lower] % 2 == 0) ? lower : upper;
    }
    return sign | patterns_[chosen];
  }

  const std::vector<double>& nonNegativeFiniteValues() const { return values_; }

 private:
  std::uint32_t infinityPattern() const {
    return ((1u << format_.exponentBits) - 1u) << format_.mantissaBits;
  }
  std::uint32_t nanPattern() const { return format_.signBit() - 1u; }  // all ones but the sign

  const FormatModel& format_;
  std::vector<std::uint32_t> patterns_;
  std::vector<double> values_;
};

}  // namespace hora::kernels::testing
