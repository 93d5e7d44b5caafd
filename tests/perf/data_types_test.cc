#include "data_types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "minifloat.h"

namespace hora::perf {
namespace {

struct NamedFormat {
  const char* name;
  MinifloatFormat format;
  int bits;
};
const NamedFormat kFormats[] = {{"half", kHalfFormat, 16},
                                {"bfloat16", kBfloat16Format, 16},
                                {"f8e4m3", kFloat8e4m3Format, 8},
                                {"f8e5m2", kFloat8e5m2Format, 8}};

TEST(Minifloat, EveryPatternSurvivesDecodeThenEncode) {
  for (const NamedFormat& f : kFormats) {
    for (std::uint32_t bits = 0; bits < (1u << f.bits); ++bits) {
      const double value = decodeMinifloat(f.format, bits);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(decodeMinifloat(f.format, encodeMinifloat(f.format, value)))) << f.name;
        continue;
      }
      ASSERT_EQ(encodeMinifloat(f.format, value), bits) << f.name << " value " << value;
    }
  }
}

TEST(Minifloat, KnownValues) {
  EXPECT_EQ(encodeMinifloat(kHalfFormat, 1.0), 0x3c00u);
  EXPECT_EQ(encodeMinifloat(kHalfFormat, -2.0), 0xc000u);
  EXPECT_EQ(encodeMinifloat(kHalfFormat, 65504.0), 0x7bffu);
  EXPECT_EQ(encodeMinifloat(kBfloat16Format, 1.0), 0x3f80u);
  EXPECT_EQ(encodeMinifloat(kFloat8e4m3Format, 448.0), 0x7eu);
  EXPECT_EQ(encodeMinifloat(kFloat8e4m3Format, 1.0), 0x38u);
  EXPECT_EQ(encodeMinifloat(kFloat8e5m2Format, 1.0), 0x3cu);
  EXPECT_EQ(encodeMinifloat(kFloat8e5m2Format, 57344.0), 0x7bu);
  EXPECT_DOUBLE_EQ(largestFinite(kFloat8e4m3Format), 448.0);
  EXPECT_DOUBLE_EQ(largestFinite(kFloat8e5m2Format), 57344.0);
  EXPECT_DOUBLE_EQ(largestFinite(kHalfFormat), 65504.0);
  EXPECT_DOUBLE_EQ(smallestSubnormal(kHalfFormat), std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(smallestSubnormal(kFloat8e4m3Format), std::ldexp(1.0, -9));
}

TEST(Minifloat, RoundsToNearestEven) {
  // half near 2048 has spacing 2: 2049 is a tie and goes to the even 2048;
  // 2051 goes to 2052.
  EXPECT_DOUBLE_EQ(decodeMinifloat(kHalfFormat, encodeMinifloat(kHalfFormat, 2049.0)), 2048.0);
  EXPECT_DOUBLE_EQ(decodeMinifloat(kHalfFormat, encodeMinifloat(kHalfFormat, 2051.0)), 2052.0);
  EXPECT_DOUBLE_EQ(decodeMinifloat(kHalfFormat, encodeMinifloat(kHalfFormat, 2050.9)), 2050.0);
  // e5m2 between 8 and 10: 9 ties to 8; e4m3 17 ties to 16, 19 to 20.
  EXPECT_DOUBLE_EQ(decodeMinifloat(kFloat8e5m2Format, encodeMinifloat(kFloat8e5m2Format, 9.0)), 8.0);
  EXPECT_DOUBLE_EQ(decodeMinifloat(kFloat8e4m3Format, encodeMinifloat(kFloat8e4m3Format, 17.0)), 16.0);
  EXPECT_DOUBLE_EQ(decodeMinifloat(kFloat8e4m3Format, encodeMinifloat(kFloat8e4m3Format, 19.0)), 20.0);
  // A carry into the next binade: 15.9 in e4m3 (spacing 1 in [8, 16)) is 16.
  EXPECT_DOUBLE_EQ(decodeMinifloat(kFloat8e4m3Format, encodeMinifloat(kFloat8e4m3Format, 15.9)), 16.0);
}

TEST(Minifloat, OverflowAndSpecials) {
  EXPECT_TRUE(std::isinf(decodeMinifloat(kHalfFormat, encodeMinifloat(kHalfFormat, 1e6))));
  EXPECT_TRUE(std::isinf(decodeMinifloat(kFloat8e5m2Format, encodeMinifloat(kFloat8e5m2Format, -1e6))));
  // e4m3 has no infinity: overflow is NaN.
  EXPECT_TRUE(std::isnan(decodeMinifloat(kFloat8e4m3Format, encodeMinifloat(kFloat8e4m3Format, 1000.0))));
  EXPECT_TRUE(std::isnan(decodeMinifloat(kFloat8e4m3Format, 0xff)));
  EXPECT_TRUE(std::isnan(decodeMinifloat(kHalfFormat, 0xffff)));
  EXPECT_EQ(encodeMinifloat(kHalfFormat, -0.0), 0x8000u);
  // Below half the smallest subnormal rounds to zero.
  EXPECT_EQ(encodeMinifloat(kFloat8e4m3Format, std::ldexp(1.0, -11)), 0u);
}

TEST(DataTypes, TableFollowsNcclOrder) {
  ASSERT_EQ(allDataTypes().size(), static_cast<std::size_t>(ncclNumTypes));
  for (int t = 0; t < ncclNumTypes; ++t) {
    EXPECT_EQ(allDataTypes()[static_cast<std::size_t>(t)].type, t);
    EXPECT_EQ(parseDataTypeName(allDataTypes()[static_cast<std::size_t>(t)].name), t);
  }
  EXPECT_EQ(dataTypeInfo(ncclFloat16).size, 2u);
  EXPECT_EQ(dataTypeInfo(ncclUint64).size, 8u);
  EXPECT_EQ(dataTypeInfo(ncclFloat8e5m2).size, 1u);
  EXPECT_STREQ(dataTypeInfo(ncclBfloat16).name, "bfloat16");
  EXPECT_EQ(parseDataTypeName("fp16"), ncclFloat16);
  EXPECT_EQ(parseDataTypeName("int"), ncclInt32);
  EXPECT_FALSE(parseDataTypeName("float128"));
}

TEST(DataTypes, EveryIntegerUpToTheLimitRoundTrips) {
  for (const DataTypeInfo& info : allDataTypes()) {
    std::vector<unsigned char> buffer(info.size);
    const auto limit = static_cast<long>(info.exactLimit);
    const long stride = limit > 100000 ? 997 : 1;
    for (long value = 0; value <= limit; value += stride) {
      storeElement(info.type, buffer.data(), 0, static_cast<double>(value));
      ASSERT_EQ(loadElement(info.type, buffer.data(), 0), static_cast<double>(value)) << info.name;
    }
  }
}

TEST(DataTypes, PoisonIsNeverAValidResult) {
  for (const DataTypeInfo& info : allDataTypes()) {
    std::vector<unsigned char> buffer(info.size);
    poisonBuffer(buffer.data(), buffer.size());
    const double value = loadElement(info.type, buffer.data(), 0);
    // Generated data and every result lie in [0, exactLimit].
    EXPECT_TRUE(std::isnan(value) || value < 0 || value > info.exactLimit) << info.name;
  }
}

TEST(DataTypes, ElementsAreAddressedByIndex) {
  float values[3] = {};
  storeElement(ncclFloat32, values, 2, 7.5);
  EXPECT_EQ(values[2], 7.5f);
  EXPECT_EQ(loadElement(ncclFloat32, values, 2), 7.5);
  std::uint16_t halves[2] = {};
  storeElement(ncclFloat16, halves, 1, 3.0);
  EXPECT_EQ(halves[1], 0x4200u);
}

}  // namespace
}  // namespace hora::perf
