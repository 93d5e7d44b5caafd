#include "float_formats.h"

#include <bit>

namespace hora::ddp {

namespace {

constexpr std::uint32_t kFloatExponentMask = 0x7f800000u;
constexpr std::uint32_t kFloatAbsMask = 0x7fffffffu;
// Float32 exponent bias 127, Float16's 15: moving an exponent between them
// adds or subtracts 112 in the exponent field.
constexpr std::uint32_t kRebias = 112u << 23;

}  // namespace

std::uint16_t floatToHalf(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  std::uint32_t magnitude = bits & kFloatAbsMask;

  if (magnitude >= kFloatExponentMask) {  // infinity or NaN
    const bool isNan = magnitude > kFloatExponentMask;
    // Keep a quiet NaN (and the top payload bits) rather than turning it into infinity.
    return sign | 0x7c00u | (isNan ? 0x0200u | ((magnitude >> 13) & 0x03ffu) : 0u);
  }
  if (magnitude >= 0x477ff000u)  // 65520.0f and above round to infinity
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {  // below 2^-14: a Float16 subnormal (or zero)
    // Adding 0.5f makes the FPU round the value to a multiple of 2^-24 (the
    // spacing of floats in [0.5, 1)), to nearest even; the low bits of the sum
    // then count those units, which is exactly the subnormal's mantissa (1024
    // means it rounded up to the smallest normal, whose bits are the same).
    const float sum = std::bit_cast<float>(magnitude) + 0.5f;
    return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(sum) - 0x3f000000u);
  }
  // Normal: rebias the exponent, then round the 13 dropped mantissa bits to
  // nearest even by adding just under half an ulp plus the kept lowest bit;
  // a carry correctly bumps the exponent.
  const std::uint32_t keptLowestBit = (magnitude >> 13) & 1u;
  magnitude = magnitude - kRebias + 0x0fffu + keptLowestBit;
  return sign | static_cast<std::uint16_t>(magnitude >> 13);
}

float halfToFloat(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  const std::uint32_t mantissa = half & 0x03ffu;
  if (exponent == 0x1f)  // infinity or NaN
    return std::bit_cast<float>(sign | kFloatExponentMask | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent << 23) + kRebias) | (mantissa << 13));
}

std::uint16_t floatToBfloat16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & kFloatAbsMask) > kFloatExponentMask)  // NaN: truncate, and keep it quiet
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  // Bfloat16 is the top half of a float: round the dropped half to nearest even.
  const std::uint32_t keptLowestBit = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7fffu + keptLowestBit) >> 16);
}

float bfloat16ToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace hora::ddp
