#include "minifloat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hora::perf {
namespace {

int bias(const MinifloatFormat& f) { return (1 << (f.exponentBits - 1)) - 1; }
std::uint32_t exponentMask(const MinifloatFormat& f) { return (1u << f.exponentBits) - 1; }
std::uint32_t mantissaMask(const MinifloatFormat& f) { return (1u << f.mantissaBits) - 1; }
// The unbiased exponent of the smallest normal number.
int minNormalExponent(const MinifloatFormat& f) { return 1 - bias(f); }

std::uint32_t nanBits(const MinifloatFormat& f) {
  if (f.hasInfinity) {
    // Exponent all ones, quiet bit set.
    return (exponentMask(f) << f.mantissaBits) | (1u << (f.mantissaBits - 1));
  }
  return (exponentMask(f) << f.mantissaBits) | mantissaMask(f);
}

}  // namespace

double largestFinite(const MinifloatFormat& f) {
  // IEEE: the top exponent is reserved, so the largest is (2 - ulp) * 2^(emax).
  // fn: the top exponent holds numbers, but its all-ones mantissa is NaN.
  const int topField = static_cast<int>(exponentMask(f)) - (f.hasInfinity ? 1 : 0);
  const std::uint32_t topMantissa = f.hasInfinity ? mantissaMask(f) : mantissaMask(f) - 1;
  const double significand = 1.0 + std::ldexp(static_cast<double>(topMantissa), -f.mantissaBits);
  return std::ldexp(significand, topField - bias(f));
}

double smallestSubnormal(const MinifloatFormat& f) {
  return std::ldexp(1.0, minNormalExponent(f) - f.mantissaBits);
}

std::uint32_t encodeMinifloat(const MinifloatFormat& f, double value) {
  const std::uint32_t signBit = 1u << (f.exponentBits + f.mantissaBits);
  if (std::isnan(value)) return nanBits(f);
  const std::uint32_t sign = std::signbit(value) ? signBit : 0;
  const double magnitude = std::fabs(value);
  const std::uint32_t infinity = f.hasInfinity ? exponentMask(f) << f.mantissaBits : nanBits(f);
  if (std::isinf(magnitude)) return sign | infinity;
  if (magnitude == 0.0) return sign;

  // Round to a multiple of the spacing of representable numbers around
  // `magnitude`: 2^(exponent - mantissaBits), where the exponent never goes
  // below the smallest normal one (the subnormal range has a fixed spacing).
  // Dividing by a power of two is exact in double, and nearbyint rounds
  // ties to even in the default rounding mode.
  int frexpExponent = 0;
  std::frexp(magnitude, &frexpExponent);
  const int exponent = std::max(frexpExponent - 1, minNormalExponent(f));
  const double spacing = std::ldexp(1.0, exponent - f.mantissaBits);
  const double rounded = std::nearbyint(magnitude / spacing) * spacing;
  if (rounded > largestFinite(f)) return sign | infinity;
  if (rounded == 0.0) return sign;

  // Rounding may have carried into the next binade: derive the fields from
  // the rounded value.
  std::frexp(rounded, &frexpExponent);
  const int roundedExponent = frexpExponent - 1;
  if (roundedExponent < minNormalExponent(f)) {
    const auto mantissa = static_cast<std::uint32_t>(rounded / smallestSubnormal(f));
    return sign | mantissa;
  }
  const auto exponentField = static_cast<std::uint32_t>(roundedExponent + bias(f));
  const auto scaled = static_cast<std::uint32_t>(std::ldexp(rounded, f.mantissaBits - roundedExponent));
  return sign | (exponentField << f.mantissaBits) | (scaled & mantissaMask(f));
}

double decodeMinifloat(const MinifloatFormat& f, std::uint32_t bits) {
  const std::uint32_t signBit = 1u << (f.exponentBits + f.mantissaBits);
  const double sign = (bits & signBit) ? -1.0 : 1.0;
  const std::uint32_t exponentField = (bits >> f.mantissaBits) & exponentMask(f);
  const std::uint32_t mantissa = bits & mantissaMask(f);
  if (exponentField == exponentMask(f)) {
    if (f.hasInfinity) {
      return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::quiet_NaN();
    }
    if (mantissa == mantissaMask(f)) return std::numeric_limits<double>::quiet_NaN();
  }
  if (exponentField == 0) return sign * static_cast<double>(mantissa) * smallestSubnormal(f);
  const double significand = 1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissaBits);
  return sign * std::ldexp(significand, static_cast<int>(exponentField) - bias(f));
}

}  // namespace hora::perf
