// The narrow floating-point types against reference models of their formats
// (reference_formats.h): every bit pattern decodes to the right value, every
// value round-trips, and rounding from float is correct at and around every
// tie, at overflow and for NaN.
#include "kernels/dtypes.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reference_formats.h"

namespace hora::kernels::testing {
namespace {

// What the tests need to know about one type.
template <typename T>
struct TypeUnderTest;
template <>
struct TypeUnderTest<float16> {
  static const FormatModel& model() { return kFloat16Model; }
};
template <>
struct TypeUnderTest<bfloat16> {
  static const FormatModel& model() { return kBfloat16Model; }
};
template <>
struct TypeUnderTest<fp8_e4m3> {
  static const FormatModel& model() { return kE4m3Model; }
};
template <>
struct TypeUnderTest<fp8_e5m2> {
  static const FormatModel& model() { return kE5m2Model; }
};

template <typename T>
T fromPattern(std::uint32_t bits) {
  using Bits = decltype(T{}.bits);
  return T::fromBits(static_cast<Bits>(bits));
}

template <typename T>
std::uint32_t roundWithType(float value) {
  return T(value).bits;
}

std::string hex(std::uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%x", bits);
  return text;
}

std::string describeFloat(float value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g (bits 0x%08x)", static_cast<double>(value),
                std::bit_cast<std::uint32_t>(value));
  return text;
}

// Checks one float against the reference rounder; NaN may be any NaN of the
// same sign.
template <typename T>
void expectRoundsLikeReference(const ReferenceRounder& reference, float input) {
  const FormatModel& model = TypeUnderTest<T>::model();
  const std::uint32_t got = roundWithType<T>(input);
  if (std::isnan(input)) {
    EXPECT_TRUE(model.isNan(got)) << model.name << " from " << describeFloat(input)
                                  << " gave " << hex(got) << ", not a NaN";
    EXPECT_EQ((got & model.signBit()) != 0, std::signbit(input))
        << model.name << ": NaN lost its sign, input " << describeFloat(input);
    return;
  }
  const std::uint32_t want = reference.round(static_cast<double>(input));
  EXPECT_EQ(got, want) << model.name << " from " << describeFloat(input) << ": got " << hex(got)
                       << " (" << model.decode(got) << "), want " << hex(want) << " ("
                       << model.decode(want) << ")";
}

template <typename T>
class NarrowFloatTest : public ::testing::Test {};
using NarrowFloatTypes = ::testing::Types<float16, bfloat16, fp8_e4m3, fp8_e5m2>;
TYPED_TEST_SUITE(NarrowFloatTest, NarrowFloatTypes);

TYPED_TEST(NarrowFloatTest, IsATriviallyCopyableHolderOfItsBits) {
  static_assert(std::is_trivially_copyable_v<TypeParam>);
  static_assert(std::is_trivially_default_constructible_v<TypeParam>);
  static_assert(std::is_standard_layout_v<TypeParam>);
  static_assert(sizeof(TypeParam) == sizeof(TypeParam{}.bits));
  static_assert(alignof(TypeParam) == sizeof(TypeParam));
}

TYPED_TEST(NarrowFloatTest, EveryPatternDecodesToItsValue) {
  const FormatModel& model = TypeUnderTest<TypeParam>::model();
  int failures = 0;
  for (std::uint32_t bits = 0; bits < model.patternCount() && failures < 10; ++bits) {
    const float got = static_cast<float>(fromPattern<TypeParam>(bits));
    const double want = model.decode(bits);
    if (std::isnan(want)) {
      if (!std::isnan(got) || std::signbit(got) != ((bits & model.signBit()) != 0)) {
        ADD_FAILURE() << model.name << " pattern " << hex(bits) << " decoded to " << got
                      << ", want a NaN with the pattern's sign";
        ++failures;
      }
      continue;
    }
    // Exact, and the sign of zero too.
    if (static_cast<double>(got) != want || std::signbit(got) != std::signbit(want)) {
      ADD_FAILURE() << model.name << " pattern " << hex(bits) << " decoded to "
                    << describeFloat(got) << ", want " << want;
      ++failures;
    }
  }
}

TYPED_TEST(NarrowFloatTest, EveryPatternRoundTripsThroughFloat) {
  const FormatModel& model = TypeUnderTest<TypeParam>::model();
  for (std::uint32_t bits = 0; bits < model.patternCount(); ++bits) {
    const float value = static_cast<float>(fromPattern<TypeParam>(bits));
    const std::uint32_t back = TypeParam(value).bits;
    if (model.isNan(bits)) {
      ASSERT_TRUE(model.isNan(back)) << model.name << " NaN " << hex(bits) << " came back as "
                                     << hex(back);
      ASSERT_EQ(back & model.signBit(), bits & model.signBit()) << model.name << " " << hex(bits);
    } else if (model.isInfinity(bits) && model.saturates) {
      // Saturating conversions turn infinity into the largest finite value.
      ASSERT_EQ(back, bits - 1) << model.name << " infinity " << hex(bits) << " came back as "
                                << hex(back);
    } else {
      ASSERT_EQ(back, bits) << model.name << " pattern " << hex(bits) << " (" << value
                            << ") came back as " << hex(back);
    }
  }
}

// Around every pair of neighbouring values: the exact midpoint (a tie, which
// must go to the even pattern) and the floats just below and above it, all
// with both signs.
TYPED_TEST(NarrowFloatTest, RoundsToNearestEvenAroundEveryMidpoint) {
  const FormatModel& model = TypeUnderTest<TypeParam>::model();
  const ReferenceRounder reference(model);
  const std::vector<double>& values = reference.nonNegativeFiniteValues();
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const double midpoint = (values[i] + values[i + 1]) / 2;
    const auto tie = static_cast<float>(midpoint);
    ASSERT_EQ(static_cast<double>(tie), midpoint) << "midpoints of these formats are floats";
    const float below = std::nextafter(tie, 0.0f);
    const float above = std::nextafter(tie, std::numeric_limits<float>::infinity());
    for (float input : {tie, below, above, -tie, -below, -above}) {
      expectRoundsLikeReference<TypeParam>(reference, input);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TYPED_TEST(NarrowFloatTest, OverflowGivesInfinityOrSaturates) {
  const FormatModel& model = TypeUnderTest<TypeParam>::model();
  const ReferenceRounder reference(model);
  const double largest = reference.nonNegativeFiniteValues().back();
  const double next = std::ldexp(1.0, std::ilogb(largest) + 1);
  const auto midpoint = static_cast<float>((largest + next) / 2);
  const float inf = std::numeric_limits<float>::infinity();
  const float flagged[] = {static_cast<float>(largest),
                           std::nextafter(midpoint, 0.0f),
                           midpoint,
                           std::nextafter(midpoint, inf),
                           static_cast<float>(next),
                           static_cast<float>(next) * 1000,
                           std::numeric_limits<float>::max(),
                           inf};
  for (float value : flagged) {
    expectRoundsLikeReference<TypeParam>(reference, value);
    expectRoundsLikeReference<TypeParam>(reference, -value);
  }
  const std::uint32_t fromInfinity = TypeParam(inf).bits;
  if (model.saturates) {
    EXPECT_EQ(model.decode(fromInfinity), largest) << model.name << ": inf must saturate";
    EXPECT_EQ(model.decode(TypeParam(-inf).bits), -largest);
  } else {
    EXPECT_TRUE(model.isInfinity(fromInfinity)) << model.name << ": inf must stay inf";
  }
}

TYPED_TEST(NarrowFloatTest, TinyValuesRoundToSubnormalsOrZero) {
  const FormatModel& model = TypeUnderTest<TypeParam>::model();
  const ReferenceRounder reference(model);
  const double smallestSubnormal = reference.nonNegativeFiniteValues()[1];
  const auto halfStep = static_cast<float>(smallestSubnormal / 2);
  const float denormalMin = std::numeric_limits<float>::denorm_min();
  for (float value : {0.0f, halfStep, std::nextafter(halfStep, 0.0f),
                      std::nextafter(halfStep, 1.0f), halfStep * 3, denormalMin,
                      std::numeric_limits<float>::min()}) {
    expectRoundsLikeReference<TypeParam>(reference, value);
    expectRoundsLikeReference<TypeParam>(reference, -value);
  }
  EXPECT_EQ(TypeParam(halfStep).bits, 0u) << "a tie between 0 and the smallest subnormal is 0";
  EXPECT_EQ(TypeParam(-0.0f).bits, model.signBit()) << "-0 keeps its sign";
}

TYPED_TEST(NarrowFloatTest, NanStaysNanWithItsSign) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(),
                        -std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::signaling_NaN(),
                        std::bit_cast<float>(0x7f800001u), std::bit_cast<float>(0xffffffffu)};
  const ReferenceRounder reference(TypeUnderTest<TypeParam>::model());
  for (float nan : nans) expectRoundsLikeReference<TypeParam>(reference, nan);
}

TYPED_TEST(NarrowFloatTest, RandomFloatsRoundLikeTheReference) {
  const ReferenceRounder reference(TypeUnderTest<TypeParam>::model());
  std::mt19937 random(20240611);
  // Random bit patterns cover every exponent; random values near 1 cover
  // the mantissa bits that matter for rounding.
  std::uniform_real_distribution<float> nearOne(-4.0f, 4.0f);
  for (int i = 0; i < 200000; ++i) {
    expectRoundsLikeReference<TypeParam>(reference, std::bit_cast<float>(static_cast<std::uint32_t>(random())));
    expectRoundsLikeReference<TypeParam>(reference, nearOne(random));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(NarrowFloatConstants, KnownPatterns) {
  // Compile-time: the conversions are constexpr.
  static_assert(float16(1.0f).bits == 0x3c00);
  static_assert(float16(-2.0f).bits == 0xc000);
  static_assert(float16(65504.0f).bits == 0x7bff);
  static_assert(bfloat16(1.0f).bits == 0x3f80);
  static_assert(fp8_e4m3(448.0f).bits == 0x7e);
  static_assert(fp8_e4m3(1.0f).bits == 0x38);
  static_assert(fp8_e5m2(57344.0f).bits == 0x7b);
  static_assert(fp8_e5m2(1.0f).bits == 0x3c);
  static_assert(static_cast<float>(float16::fromBits(0x0001)) == 0x1p-24f);
  static_assert(static_cast<float>(fp8_e4m3::fromBits(0x01)) == 0x1p-9f);
  // NVIDIA's saturating conversions: beyond the range gives the largest
  // finite value, NaN gives the NaN pattern.
  EXPECT_EQ(fp8_e4m3(1e6f).bits, 0x7e);
  EXPECT_EQ(fp8_e4m3(-1e6f).bits, 0xfe);
  EXPECT_EQ(fp8_e4m3(std::numeric_limits<float>::quiet_NaN()).bits, 0x7f);
  EXPECT_EQ(fp8_e5m2(1e6f).bits, 0x7b);
  EXPECT_EQ(fp8_e5m2(std::numeric_limits<float>::infinity()).bits, 0x7b);
  EXPECT_EQ(float16(1e6f).bits, 0x7c00);
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  // Ties to even: 1 + 2^-11 is halfway between 1 and the next half.
  EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3c00);
  EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  EXPECT_EQ(bfloat16(1.0f + 0x1p-8f).bits, 0x3f80);
  EXPECT_EQ(bfloat16(1.0f + 3 * 0x1p-8f).bits, 0x3f82);
  EXPECT_EQ(fp8_e4m3(464.0f).bits, 0x7e);  // tie between 448 and 480 (not a value): even
}

#if defined(__FLT16_MANT_DIG__)
// A second, independent opinion on float16: the compiler's own _Float16
// conversions (software or F16C), over every pattern and random floats.
TEST(Float16AgainstCompiler, DecodesEveryPatternAndRoundsRandomFloatsTheSame) {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const auto raw = static_cast<std::uint16_t>(bits);
    const auto compilerValue = static_cast<float>(std::bit_cast<_Float16>(raw));
    const auto ours = static_cast<float>(float16::fromBits(raw));
    if (std::isnan(compilerValue)) {
      ASSERT_TRUE(std::isnan(ours)) << hex(bits);
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(ours), std::bit_cast<std::uint32_t>(compilerValue))
          << hex(bits);
    }
  }
  std::mt19937 random(7);
  for (int i = 0; i < 300000; ++i) {
    const float value = std::bit_cast<float>(static_cast<std::uint32_t>(random()));
    const auto compilerBits = std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
    const std::uint16_t ours = float16(value).bits;
    if (std::isnan(value)) {
      ASSERT_TRUE(kFloat16Model.isNan(ours)) << describeFloat(value);
    } else {
      ASSERT_EQ(ours, compilerBits) << describeFloat(value);
    }
  }
}
#endif

}  // namespace
}  // namespace hora::kernels::testing
