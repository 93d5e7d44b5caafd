// The floating-point element types NCCL supports that C++ lacks:
//
//   type       sign exponent mantissa  bias  largest finite  infinities  NaN
//   float16       1     5       10      15   65504           yes         IEEE
//   bfloat16      1     8        7     127   ~3.39e38        yes         IEEE
//   fp8_e4m3      1     4        3       7   448             no          S.1111.111 only
//   fp8_e5m2      1     5        2      15   57344           yes         IEEE
//
// Each is a trivially copyable struct holding the bit pattern, so buffers of
// them can be memcpy'd, sent over the wire and reinterpreted from user memory.
// They convert to float exactly (every value of these types is a float) and
// from float with round-to-nearest-even. On overflow, float16 and bfloat16
// become infinity, as IEEE arithmetic does; the fp8 types saturate to their
// largest finite value instead (infinity included), as NVIDIA's
// __NV_SATFINITE conversions do, because e4m3 has no infinity and a training
// step is better served by a large value than by an inf. NaN stays NaN (as a
// quiet NaN with the same sign).
//
// The conversions are written without branches or tables (integer selects
// around a single float operation), so that a compiler can vectorize a loop
// that converts whole buffers, and so that the same code runs in CUDA kernels
// (every function is HORA_HOST_DEVICE). They rely on IEEE float addition with
// round-to-nearest-even, the default rounding mode.
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace hora {

namespace detail {

// __builtin_bit_cast is the compiler primitive behind std::bit_cast (GCC,
// Clang and nvcc have it). Unlike the library function, which is not
// declared __device__, it is usable (and constexpr) in CUDA device code.
HORA_HOST_DEVICE constexpr float floatFromBits(std::uint32_t bits) {
  return __builtin_bit_cast(float, bits);
}

HORA_HOST_DEVICE constexpr std::uint32_t bitsOfFloat(float value) {
  return __builtin_bit_cast(std::uint32_t, value);
}

inline constexpr std::uint32_t kFloatSignBit = 0x80000000u;
inline constexpr std::uint32_t kFloatInfinityBits = 0x7f800000u;
inline constexpr std::uint32_t kFloatQuietNanBits = 0x7fc00000u;
inline constexpr int kFloatMantissaBits = 23;

HORA_HOST_DEVICE constexpr std::uint32_t minBits(std::uint32_t a, std::uint32_t b) {
  return a < b ? a : b;
}
HORA_HOST_DEVICE constexpr std::uint32_t maxBits(std::uint32_t a, std::uint32_t b) {
  return a > b ? a : b;
}

// Vectorizing: compilers do not if-convert a float operation that only some
// inputs execute, as long as float operations may trap (GCC's default
// -ftrapping-math), and one conditional float operation keeps a whole
// conversion loop scalar. So each converter below runs its one float
// operation for every input, and combines its result with integer min/max,
// selects and ors that do not depend on that operation.

// The encoders' common part: rounds a float magnitude (sign bit clear, not
// NaN) to nearest even in a narrow type with `mantissaBits` mantissa bits
// whose smallest normal has float exponent field `minNormalExponent`, and
// returns the narrow type's bit pattern.
//
// Adding a power of two C whose unit in the last place equals the narrow
// type's unit in the last place at the magnitude's exponent makes the float
// adder do the rounding: the sum's mantissa, minus C's, counts the rounded
// number of narrow units. For normal magnitudes C = 2^(e + 23 - mantissaBits)
// where 2^e is the magnitude's binade, and the count lies in [2^mantissaBits,
// 2^(mantissaBits+1)]: the narrow significand with its leading one, which
// adding the exponent field above the mantissa turns into the bit pattern (a
// count that rounds up to 2^(mantissaBits+1) correctly carries into the
// exponent). Below the smallest normal, e is held at the smallest normal's
// exponent, the unit becomes the subnormal step, and the count is the
// subnormal bit pattern itself. This relies on round-to-nearest-even, the
// default float rounding mode.
HORA_HOST_DEVICE constexpr std::uint32_t encodeMagnitude(std::uint32_t magnitude,
                                                         int mantissaBits,
                                                         std::uint32_t minNormalExponent) {
  const std::uint32_t exponent = maxBits(magnitude >> kFloatMantissaBits, minNormalExponent);
  const std::uint32_t alignerBits = (exponent + kFloatMantissaBits - mantissaBits)
                                    << kFloatMantissaBits;
  const std::uint32_t units =
      bitsOfFloat(floatFromBits(magnitude) + floatFromBits(alignerBits)) - alignerBits;
  return units + ((exponent - minNormalExponent) << mantissaBits);
}

// The decoders' common part. `magnitude` holds a narrow type's exponent and
// mantissa moved into float's exponent and mantissa positions (sign removed);
// `exponentMask` covers the narrow exponent there; `rebias` is
// (127 - narrow bias) << 23. The result is exact for finite patterns; for the
// all-ones exponent of inf/NaN it is a finite value with the right mantissa,
// which callers turn into inf/NaN by setting all exponent bits.
//
// Both cases are one exact float subtraction of two numbers built from bits,
// where neither operand is ever zero (a subtraction of zero would be folded
// away on that path, leaving a conditional float operation):
//   normal,    exponent e: 2^e (1 + f)  = 2^(e+1) (1 + f/2) - 2^e
//   subnormal:             2^emin f     = 2^emin (1 + f)    - 2^emin
// No subnormal float is involved, which some CPUs handle slowly.
HORA_HOST_DEVICE constexpr float decodeMagnitude(std::uint32_t magnitude,
                                                 std::uint32_t exponentMask,
                                                 std::uint32_t rebias) {
  const std::uint32_t exponentOne = 1u << kFloatMantissaBits;
  const std::uint32_t exponent = magnitude & exponentMask;
  const std::uint32_t fraction = magnitude & ~exponentMask;
  const bool isSubnormal = exponent == 0;
  const std::uint32_t minuend = isSubnormal ? rebias + exponentOne + fraction
                                            : exponent + rebias + exponentOne + (fraction >> 1);
  const std::uint32_t subtrahend = isSubnormal ? rebias + exponentOne : exponent + rebias;
  return floatFromBits(minuend) - floatFromBits(subtrahend);
}

// ---- float16 (IEEE binary16) ----

HORA_HOST_DEVICE constexpr float halfBitsToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t magnitude = static_cast<std::uint32_t>(bits & 0x7fffu) << 13;
  const std::uint32_t exponentMask = 0x1fu << kFloatMantissaBits;
  const std::uint32_t rebias = (127u - 15u) << kFloatMantissaBits;
  // All-ones exponent (inf, NaN): float's exponent becomes all ones as well;
  // the mantissa, NaN payload included, is already in place.
  const std::uint32_t special =
      (magnitude & exponentMask) == exponentMask ? kFloatInfinityBits : 0u;
  return floatFromBits(bitsOfFloat(decodeMagnitude(magnitude, exponentMask, rebias)) | special |
                       sign);
}

HORA_HOST_DEVICE constexpr std::uint16_t floatToHalfBits(float value) {
  const std::uint32_t bits = bitsOfFloat(value);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & ~kFloatSignBit;
  // 65520 is the midpoint between 65504 (the largest half) and 65536; it and
  // everything above (infinity, and NaN, which is handled below) rounds to
  // the infinity pattern 0x7c00.
  const std::uint32_t roundsToInfinity = 0x477ff000u;  // 65520.0f
  const std::uint32_t finiteOrInfinity =
      encodeMagnitude(minBits(magnitude, roundsToInfinity), 10, 127u - 14u);
  // NaN: a quiet NaN keeping the payload's top bits. Its pattern contains
  // 0x7c00's bits, so or-ing it over the encoder's result gives the NaN.
  const std::uint32_t nanOrZero =
      magnitude > kFloatInfinityBits ? 0x7e00u | ((magnitude >> 13) & 0x3ffu) : 0u;
  return static_cast<std::uint16_t>(finiteOrInfinity | nanOrZero | sign);
}

// ---- bfloat16 (the upper half of a float) ----

HORA_HOST_DEVICE constexpr float bfloat16BitsToFloat(std::uint16_t bits) {
  return floatFromBits(static_cast<std::uint32_t>(bits) << 16);
}

HORA_HOST_DEVICE constexpr std::uint16_t floatToBfloat16Bits(float value) {
  const std::uint32_t bits = bitsOfFloat(value);
  const bool isNan = (bits & ~kFloatSignBit) > kFloatInfinityBits;
  // Same exponent as float, so rounding needs no rebias and no clamp: the
  // largest floats carry into the all-ones exponent, which is infinity.
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t quietNan = (bits >> 16) | 0x0040u;
  return static_cast<std::uint16_t>(isNan ? quietNan : rounded);
}

// ---- fp8 E4M3 (OCP): bias 7, no infinities, S.1111.111 is the only NaN ----

HORA_HOST_DEVICE constexpr float fp8e4m3BitsToFloat(std::uint8_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x80u) << 24;
  const std::uint32_t magnitude = static_cast<std::uint32_t>(bits & 0x7fu) << 20;
  const std::uint32_t exponentMask = 0xfu << kFloatMantissaBits;
  const std::uint32_t rebias = (127u - 7u) << kFloatMantissaBits;
  const std::uint32_t nan = (bits & 0x7fu) == 0x7fu ? kFloatQuietNanBits : 0u;
  return floatFromBits(bitsOfFloat(decodeMagnitude(magnitude, exponentMask, rebias)) | nan |
                       sign);
}

HORA_HOST_DEVICE constexpr std::uint8_t floatToFp8e4m3Bits(float value) {
  const std::uint32_t bits = bitsOfFloat(value);
  const std::uint32_t sign = (bits >> 24) & 0x80u;
  const std::uint32_t magnitude = bits & ~kFloatSignBit;
  // Saturating: every input from 448 up, infinity included, becomes 448
  // (0x7e). Clamping the input there does it, and keeps the exponent of
  // huge inputs (and of NaN, handled below) in range of the encoder.
  const std::uint32_t largestFinite = 0x43e00000u;  // 448.0f
  const std::uint32_t finite = encodeMagnitude(minBits(magnitude, largestFinite), 3, 127u - 6u);
  // NaN is 0x7f, which contains the 0x7e that NaN's clamped input encodes to.
  const std::uint32_t nanOrZero = magnitude > kFloatInfinityBits ? 0x7fu : 0u;
  return static_cast<std::uint8_t>(finite | nanOrZero | sign);
}

// ---- fp8 E5M2: bias 15, IEEE-like with infinities and NaNs ----
// Its bit pattern is the upper byte of the float16 with the same value.

HORA_HOST_DEVICE constexpr float fp8e5m2BitsToFloat(std::uint8_t bits) {
  return halfBitsToFloat(static_cast<std::uint16_t>(bits << 8));
}

HORA_HOST_DEVICE constexpr std::uint8_t floatToFp8e5m2Bits(float value) {
  const std::uint32_t bits = bitsOfFloat(value);
  const std::uint32_t sign = (bits >> 24) & 0x80u;
  const std::uint32_t magnitude = bits & ~kFloatSignBit;
  // Saturating as for e4m3: every input from 57344 (0x7b) up becomes 57344.
  const std::uint32_t largestFinite = 0x47600000u;  // 57344.0f
  const std::uint32_t finite = encodeMagnitude(minBits(magnitude, largestFinite), 2, 127u - 14u);
  // NaN is 0x7f (quiet), which contains the 0x7b of NaN's clamped input.
  const std::uint32_t nanOrZero = magnitude > kFloatInfinityBits ? 0x7fu : 0u;
  return static_cast<std::uint8_t>(finite | nanOrZero | sign);
}

}  // namespace detail

// The four types share one shape: `bits` is the whole state; constructing
// from a float rounds; converting to float is exact and implicit, so mixed
// expressions like `a + b` compute in float. fromBits() reinterprets a raw
// pattern (e.g. one read from a user buffer).

struct float16 {
  std::uint16_t bits;

  float16() = default;
  HORA_HOST_DEVICE constexpr explicit float16(float value) : bits(detail::floatToHalfBits(value)) {}
  HORA_HOST_DEVICE static constexpr float16 fromBits(std::uint16_t raw) {
    float16 result{};
    result.bits = raw;
    return result;
  }
  HORA_HOST_DEVICE constexpr operator float() const { return detail::halfBitsToFloat(bits); }
};

struct bfloat16 {
  std::uint16_t bits;

  bfloat16() = default;
  HORA_HOST_DEVICE constexpr explicit bfloat16(float value)
      : bits(detail::floatToBfloat16Bits(value)) {}
  HORA_HOST_DEVICE static constexpr bfloat16 fromBits(std::uint16_t raw) {
    bfloat16 result{};
    result.bits = raw;
    return result;
  }
  HORA_HOST_DEVICE constexpr operator float() const { return detail::bfloat16BitsToFloat(bits); }
};

struct fp8_e4m3 {
  std::uint8_t bits;

  fp8_e4m3() = default;
  HORA_HOST_DEVICE constexpr explicit fp8_e4m3(float value)
      : bits(detail::floatToFp8e4m3Bits(value)) {}
  HORA_HOST_DEVICE static constexpr fp8_e4m3 fromBits(std::uint8_t raw) {
    fp8_e4m3 result{};
    result.bits = raw;
    return result;
  }
  HORA_HOST_DEVICE constexpr operator float() const { return detail::fp8e4m3BitsToFloat(bits); }
};

struct fp8_e5m2 {
  std::uint8_t bits;

  fp8_e5m2() = default;
  HORA_HOST_DEVICE constexpr explicit fp8_e5m2(float value)
      : bits(detail::floatToFp8e5m2Bits(value)) {}
  HORA_HOST_DEVICE static constexpr fp8_e5m2 fromBits(std::uint8_t raw) {
    fp8_e5m2 result{};
    result.bits = raw;
    return result;
  }
  HORA_HOST_DEVICE constexpr operator float() const { return detail::fp8e5m2BitsToFloat(bits); }
};

static_assert(sizeof(float16) == 2 && alignof(float16) == 2);
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2);
static_assert(sizeof(fp8_e4m3) == 1 && sizeof(fp8_e5m2) == 1);

}  // namespace hora
