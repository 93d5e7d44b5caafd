// The functors one element at a time, the way a CUDA kernel will call them
// (reduceHost's loops call apply() on the compute type instead).
#include "kernels/reduce_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace hora::kernels {
namespace {

// Compile-time checks: the functors are constexpr, so wrapping and
// truncation are verified by the compiler itself.
static_assert(FuncSum<std::int8_t>{}(127, 1) == -128);
static_assert(FuncSum<std::uint32_t>{}(0xffffffffu, 2) == 1u);
static_assert(FuncProd<std::int64_t>{}(std::numeric_limits<std::int64_t>::max(), 2) == -2);
static_assert(FuncProd<std::uint8_t>{}(16, 16) == 0);
static_assert(FuncMax<std::int32_t>{}(-5, 3) == 3);
static_assert(FuncMin<std::uint64_t>{}(5, 3) == 3);
static_assert(FuncPostDiv<std::int32_t>(2)(-7) == -3);
static_assert(FuncPostDiv<std::int64_t>(std::uint64_t{1} << 63)(
                  std::numeric_limits<std::int64_t>::min()) == -1);
static_assert(FuncPostDiv<std::uint64_t>(3)(10) == 3);
static_assert(FuncPreMul<std::int32_t>(-3)(5) == -15);

TEST(ReduceOps, NarrowFloatsComputeInFloatAndRoundOnce) {
  const float16 a(1.0f), b(0x1p-11f);
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even, 1.
  EXPECT_EQ(FuncSum<float16>{}(a, b).bits, 0x3c00);
  EXPECT_EQ(FuncSum<float16>{}(a, float16(0x1.8p-11f)).bits, 0x3c01);
  EXPECT_EQ(FuncProd<bfloat16>{}(bfloat16(3.0f), bfloat16(0.5f)).bits, bfloat16(1.5f).bits);
  EXPECT_EQ(FuncSum<fp8_e4m3>{}(fp8_e4m3(448.0f), fp8_e4m3(448.0f)).bits, 0x7e) << "saturates";
  EXPECT_EQ(FuncPostDiv<fp8_e5m2>(4)(fp8_e5m2(3.0f)).bits, fp8_e5m2(0.75f).bits);
  EXPECT_EQ(FuncPreMul<float16>(float16(0.5f))(float16(3.0f)).bits, float16(1.5f).bits);
}

TEST(ReduceOps, MaxAndMinReturnTheNumberWhicheverSideTheNanIsOn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FuncMax<float>{}(nan, 1.0f), 1.0f);
  EXPECT_EQ(FuncMax<float>{}(1.0f, nan), 1.0f);
  EXPECT_EQ(FuncMin<double>{}(static_cast<double>(nan), 1.0), 1.0);
  EXPECT_EQ(FuncMin<double>{}(1.0, static_cast<double>(nan)), 1.0);
  EXPECT_EQ(static_cast<float>(FuncMax<bfloat16>{}(bfloat16(2.0f), bfloat16(nan))), 2.0f);
  EXPECT_EQ(static_cast<float>(FuncMin<fp8_e4m3>{}(fp8_e4m3(nan), fp8_e4m3(2.0f))), 2.0f);
  EXPECT_TRUE(std::isnan(FuncMax<float>{}(nan, nan)));
  EXPECT_TRUE(std::isnan(FuncMin<double>{}(static_cast<double>(nan), static_cast<double>(nan))));
}

TEST(ReduceOps, IntegerPostDivisionTruncatesTowardZero) {
  for (std::int32_t value : {-9, -8, -7, -1, 0, 1, 7, 8, 9}) {
    for (std::uint64_t divisor : {1u, 2u, 3u, 8u}) {
      EXPECT_EQ(FuncPostDiv<std::int32_t>(divisor)(value),
                value / static_cast<std::int32_t>(divisor))
          << value << " / " << divisor;
      EXPECT_EQ(FuncPostDiv<std::int64_t>(divisor)(value),
                value / static_cast<std::int64_t>(divisor))
          << value << " / " << divisor;
    }
  }
  EXPECT_EQ(FuncPostDiv<std::uint32_t>(1)(0xffffffffu), 0xffffffffu);
  EXPECT_EQ(FuncPostDiv<std::int8_t>(~std::uint64_t{0})(-128), 0);
}

}  // namespace
}  // namespace hora::kernels
