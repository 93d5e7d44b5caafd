// The 16-bit conversions of the compression hook and 16-bit buckets.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "float_formats.h"

namespace hora::ddp {
namespace {

TEST(FloatFormats, HalfKnownValues) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);   // largest half
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);   // rounds down
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);   // rounds to infinity
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);   // tie to even: zero
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001); // above the tie
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);   // smallest normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 0x1.8p-11f), 0x3c01);
  EXPECT_EQ(floatToHalf(1.0f + 0x3p-11f), 0x3c02);  // tie between 0x3c01 and 0x3c02: even
}

TEST(FloatFormats, EveryHalfRoundTripsThroughFloat) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<std::uint16_t>(bits);
    const float value = halfToFloat(half);
    if (std::isnan(value)) {
      EXPECT_EQ(half & 0x7c00, 0x7c00);
      continue;
    }
    ASSERT_EQ(floatToHalf(value), half) << "half bits " << std::hex << bits;
  }
}

TEST(FloatFormats, HalfRoundsToNearest) {
  // Between two neighbouring halves, values convert to the nearer one.
  for (std::uint16_t half = 0x0001; half < 0x7bff; half = static_cast<std::uint16_t>(half + 97)) {
    const float low = halfToFloat(half);
    const float high = halfToFloat(static_cast<std::uint16_t>(half + 1));
    EXPECT_EQ(floatToHalf(low + (high - low) * 0.25f), half);
    EXPECT_EQ(floatToHalf(low + (high - low) * 0.75f), half + 1);
  }
}

TEST(FloatFormats, Bfloat16) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBfloat16(-0.0f), 0x8000);
  // 1 + 2^-8 is the tie between 1 and 1 + 2^-7: even (1).
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1.8p-8f), 0x3f81);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = bfloat16ToFloat(static_cast<std::uint16_t>(bits));
    if (!std::isnan(value)) {
      ASSERT_EQ(floatToBfloat16(value), bits);
    }
  }
}

}  // namespace
}  // namespace hora::ddp
