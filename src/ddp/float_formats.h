// Conversions between float and the 16-bit formats used on the wire by the
// compression hook and in Float16/Bfloat16 buckets. Round to nearest even;
// NaN stays NaN, infinities stay infinite, too-large values become infinite.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hora::ddp {

std::uint16_t floatToHalf(float value);
float halfToFloat(std::uint16_t bits);
std::uint16_t floatToBfloat16(float value);
float bfloat16ToFloat(std::uint16_t bits);

}  // namespace hora::ddp
