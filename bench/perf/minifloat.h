// Conversions between double and the small floating-point formats NCCL
// reduces over (half, bfloat16, fp8 e4m3 and e5m2).
//
// hora-perf fills buffers and reads results on the host, where C++ has no
// arithmetic type for these formats; this codec is the one place that knows
// their bit layouts. Encoding rounds to nearest, ties to even, like the
// hardware conversions the collectives use.
#pragma once

#include <cstdint>

namespace hora::perf {

struct MinifloatFormat {
  int exponentBits;
  int mantissaBits;
  // IEEE-style formats keep the top exponent for infinities and NaNs. The
  // "fn" formats (e4m3) use it for numbers too: only the all-ones pattern is
  // NaN, and there is no infinity (an overflow becomes NaN).
  bool hasInfinity;
};

inline constexpr MinifloatFormat kHalfFormat{5, 10, true};
inline constexpr MinifloatFormat kBfloat16Format{8, 7, true};
inline constexpr MinifloatFormat kFloat8e4m3Format{4, 3, false};
inline constexpr MinifloatFormat kFloat8e5m2Format{5, 2, true};

// The bit pattern (in the low 1 + exponentBits + mantissaBits bits) nearest
// to `value`.
std::uint32_t encodeMinifloat(const MinifloatFormat& format, double value);

// The exact value of a bit pattern; NaN patterns give a quiet NaN.
double decodeMinifloat(const MinifloatFormat& format, std::uint32_t bits);

double largestFinite(const MinifloatFormat& format);
double smallestSubnormal(const MinifloatFormat& format);

}  // namespace hora::perf
