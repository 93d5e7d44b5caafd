// The tests' own reference: formats, reductions and the choice of inputs.
// A wrong reference would make the collective tests fail (or, worse, pass)
// for the wrong reason, so it is checked against facts stated here by hand.
#include <cmath>

#include <gtest/gtest.h>

#include "case_matrix.h"
#include "reference.h"

namespace hora_coll_test {
namespace {

struct KnownPattern {
  ncclDataType_t type;
  double value;
  std::uint64_t bits;
};

TEST(ElementTypes, KnownPatternsDecodeAndEncode) {
  const KnownPattern known[] = {
      {ncclFloat16, 1.0, 0x3c00},       {ncclFloat16, -2.0, 0xc000},
      {ncclFloat16, 65504.0, 0x7bff},   {ncclFloat16, std::ldexp(1.0, -24), 0x0001},
      {ncclBfloat16, 1.0, 0x3f80},      {ncclBfloat16, -0.5, 0xbf00},
      {ncclFloat32, 1.0, 0x3f800000},   {ncclFloat64, -1.5, 0xbff8000000000000ull},
      {ncclFloat8e4m3, 1.0, 0x38},      {ncclFloat8e4m3, 448.0, 0x7e},
      {ncclFloat8e4m3, -16.0, 0xd8},    {ncclFloat8e4m3, std::ldexp(1.0, -9), 0x01},
      {ncclFloat8e5m2, 1.0, 0x3c},      {ncclFloat8e5m2, 57344.0, 0x7b},
      {ncclFloat8e5m2, -0.25, 0xb4},    {ncclFloat8e5m2, std::ldexp(1.0, -16), 0x01},
  };
  for (const auto& k : known) {
    const ElementType& type = elementType(k.type);
    SCOPED_TRACE(std::string(type.name) + " " + std::to_string(k.value));
    EXPECT_EQ(decodeFloat(type, k.bits), k.value);
    auto encoded = encodeExact(type, k.value);
    ASSERT_TRUE(encoded.has_value());
    EXPECT_EQ(*encoded, k.bits);
  }
}

TEST(ElementTypes, SpecialPatterns) {
  const ElementType& e4m3 = elementType(ncclFloat8e4m3);
  EXPECT_TRUE(std::isnan(decodeFloat(e4m3, 0x7f)));
  EXPECT_TRUE(std::isnan(decodeFloat(e4m3, 0xff)));
  EXPECT_TRUE(isFiniteBits(e4m3, 0x7e));  // no infinity: the top binade holds numbers
  const ElementType& e5m2 = elementType(ncclFloat8e5m2);
  EXPECT_EQ(decodeFloat(e5m2, 0x7c), INFINITY);
  EXPECT_FALSE(isFiniteBits(e5m2, 0x7c));
  EXPECT_TRUE(std::isnan(decodeFloat(e5m2, 0x7d)));
  EXPECT_EQ(*encodeExact(elementType(ncclFloat16), -0.0), 0x8000u);
}

TEST(ElementTypes, EncodeRefusesWhatDoesNotFit) {
  EXPECT_FALSE(encodeExact(elementType(ncclFloat8e4m3), 17.0).has_value());  // 3 mantissa bits
  EXPECT_FALSE(encodeExact(elementType(ncclFloat8e4m3), 480.0).has_value());  // beyond 448
  EXPECT_FALSE(encodeExact(elementType(ncclFloat8e5m2), 9.0).has_value());
  EXPECT_FALSE(encodeExact(elementType(ncclFloat16), 65536.0).has_value());
  EXPECT_FALSE(encodeExact(elementType(ncclFloat32), 0.1).has_value());
  EXPECT_FALSE(encodeExact(elementType(ncclInt32), 1.0).has_value());
}

TEST(Reference, IntegersWrapAround) {
  const ElementType& i8 = elementType(ncclInt8);
  EXPECT_EQ(*reduceReference(i8, Reduction::Sum, {0x7f, 0x01}), 0x80u);  // 127 + 1 = -128
  EXPECT_EQ(*reduceReference(i8, Reduction::Prod, {0x10, 0x10}), 0x00u);  // 256 wraps to 0
  EXPECT_EQ(*reduceReference(i8, Reduction::Max, {0xff, 0x01}), 0x01u);  // -1 < 1
  EXPECT_EQ(*reduceReference(elementType(ncclUint8), Reduction::Max, {0xff, 0x01}), 0xffu);
  const ElementType& u64 = elementType(ncclUint64);
  EXPECT_EQ(*reduceReference(u64, Reduction::Sum, {~0ull, 2}), 1u);
}

TEST(Reference, IntegerAvgTruncatesTheWrappedSum) {
  const ElementType& i32 = elementType(ncclInt32);
  EXPECT_EQ(signedValue(i32, *reduceReference(i32, Reduction::Avg, {0xfffffff9u, 0})), -3);  // -7/2
  const ElementType& i8 = elementType(ncclInt8);
  // 100 + 100 wraps to -56; -56 / 2 = -28.
  EXPECT_EQ(signedValue(i8, *reduceReference(i8, Reduction::Avg, {100, 100})), -28);
}

TEST(Reference, PreMulSumScalesEachInput) {
  const ElementType& f = elementType(ncclFloat32);
  // device scalar 2, host scalar 0.5
  EXPECT_EQ(decodeFloat(f, *reduceReference(f, Reduction::PreMulSumDevice,
                                            {*encodeExact(f, 1.5), *encodeExact(f, -4)})),
            -5.0);
  EXPECT_EQ(decodeFloat(f, *reduceReference(f, Reduction::PreMulSumHost,
                                            {*encodeExact(f, 1.5), *encodeExact(f, -4)})),
            -1.25);
  const ElementType& i8 = elementType(ncclInt8);  // scalar -3: 50*-3 + 1*-3 = -153 wraps to 103
  EXPECT_EQ(signedValue(i8, *reduceReference(i8, Reduction::PreMulSumDevice, {50, 1})), 103);
}

// The inputs the matrix uses must have exact results for every type,
// reduction and rank count it runs (avg: power-of-two counts only).
TEST(Reference, ChosenInputsHaveExactResults) {
  for (const auto& type : allElementTypes())
    for (Reduction reduction : allReductions())
      for (int nranks = 1; nranks <= 8; ++nranks) {
        if (reduction == Reduction::Avg && type.isFloating() && !isPowerOfTwo(nranks)) continue;
        std::vector<std::uint64_t> inputs(nranks);
        for (std::size_t index = 0; index < 300; ++index) {
          for (int r = 0; r < nranks; ++r)
            inputs[r] = reductionInputBits(type, reduction, nranks, 5, r, index);
          ASSERT_TRUE(reduceReference(type, reduction, inputs).has_value())
              << type.name << " " << reductionName(reduction) << " " << nranks << " ranks, index "
              << index;
        }
      }
}

TEST(Reference, InputsDifferBetweenRanksAndIndices) {
  const ElementType& f = elementType(ncclFloat32);
  int same = 0;
  for (std::size_t i = 0; i < 100; ++i)
    same += reductionInputBits(f, Reduction::Sum, 2, 1, 0, i) ==
            reductionInputBits(f, Reduction::Sum, 2, 1, 1, i);
  EXPECT_LT(same, 10);
}

}  // namespace
}  // namespace hora_coll_test
