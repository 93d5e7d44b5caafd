// The element types of src/kernels (shared with the collectives, host and
// device) do the rounding; this file only gives them the names the DDP layer
// uses for its buckets and the compression hook.
#include "float_formats.h"

#include "kernels/dtypes.h"

namespace hora::ddp {

std::uint16_t floatToHalf(float value) { return float16(value).bits; }
float halfToFloat(std::uint16_t bits) { return float16::fromBits(bits); }
std::uint16_t floatToBfloat16(float value) { return bfloat16(value).bits; }
float bfloat16ToFloat(std::uint16_t bits) { return bfloat16::fromBits(bits); }

}  // namespace hora::ddp
