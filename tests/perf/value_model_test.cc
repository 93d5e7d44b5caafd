// The inputs hora-perf generates must reduce to exactly the expected value
// in the element type itself, whatever order a library combines them in.
// These tests reduce them in several orders, rounding to the type after
// every step as a library would, and compare with ValueModel::reduced.
#include "value_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <vector>

#include "data_types.h"

namespace hora::perf {
namespace {

// `value` as the element type holds it: rounded for floating types; for
// integers it must already be whole and in range.
double inType(ncclDataType_t type, double value) {
  unsigned char buffer[8];
  storeElement(type, buffer, 0, value);
  const double stored = loadElement(type, buffer, 0);
  if (dataTypeInfo(type).valueClass != ValueClass::Floating) {
    EXPECT_EQ(stored, value) << "integer result out of range: " << value;
  }
  return stored;
}

double combineInType(ncclDataType_t type, ncclRedOp_t op, double a, double b) {
  switch (op) {
    case ncclProd: return inType(type, a * b);
    case ncclMax: return std::max(a, b);
    case ncclMin: return std::min(a, b);
    default: return inType(type, a + b);
  }
}

// Reduces inputs in the given order of ranks, rounding after each step.
// Floating avg multiplies each input by 1/n in the type first, as NCCL does;
// integer avg divides the sum at the end.
double reduceInOrder(ncclDataType_t type, ncclRedOp_t op, const std::vector<double>& inputs,
                     const std::vector<int>& order) {
  const int n = static_cast<int>(inputs.size());
  const bool floating = dataTypeInfo(type).valueClass == ValueClass::Floating;
  const double scale = floating ? inType(type, 1.0 / n) : 1.0;
  auto pre = [&](double v) { return op == ncclAvg && floating ? inType(type, v * scale) : v; };
  double result = pre(inputs[static_cast<std::size_t>(order[0])]);
  for (std::size_t k = 1; k < order.size(); ++k) {
    result = combineInType(type, op, result, pre(inputs[static_cast<std::size_t>(order[k])]));
  }
  if (op == ncclAvg && !floating) result = std::trunc(result / n);
  return result;
}

// A pairwise tree: reduce halves recursively, then combine.
double reduceAsTree(ncclDataType_t type, ncclRedOp_t op, const std::vector<double>& pre, int first,
                    int count) {
  if (count == 1) return pre[static_cast<std::size_t>(first)];
  const int half = count / 2;
  return combineInType(type, op, reduceAsTree(type, op, pre, first, half),
                       reduceAsTree(type, op, pre, first + half, count - half));
}

struct Case {
  ncclDataType_t type;
  ncclRedOp_t op;
  int nranks;
};

std::vector<Case> everyCase() {
  std::vector<Case> cases;
  for (const DataTypeInfo& info : allDataTypes()) {
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64}) cases.push_back({info.type, op, n});
    }
  }
  return cases;
}

TEST(ValueModel, ReductionsAreExactInEveryOrder) {
  for (const Case& c : everyCase()) {
    const ValueModel model(c.type, c.op, c.nranks);
    const bool floating = dataTypeInfo(c.type).valueClass == ValueClass::Floating;
    std::vector<int> ascending(static_cast<std::size_t>(c.nranks));
    std::iota(ascending.begin(), ascending.end(), 0);
    for (int rep = 0; rep < 3; ++rep) {
      for (std::size_t index = 0; index < 80; ++index) {
        std::vector<double> inputs;
        for (int r = 0; r < c.nranks; ++r) {
          inputs.push_back(model.input(r, index, rep));
          ASSERT_EQ(inType(c.type, inputs.back()), inputs.back()) << "input not exact";
        }
        const double expected = model.reduced(index, rep);
        std::vector<int> descending(ascending.rbegin(), ascending.rend());
        // A ring that starts where this element's chunk starts.
        std::vector<int> ring(ascending);
        std::rotate(ring.begin(), ring.begin() + static_cast<std::ptrdiff_t>(index % ring.size()),
                    ring.end());
        for (const auto* order : {&ascending, &descending, &ring}) {
          const double got = reduceInOrder(c.type, c.op, inputs, *order);
          ASSERT_TRUE(model.matches(got, expected))
              << dataTypeInfo(c.type).name << " op " << c.op << " n " << c.nranks << " index " << index
              << ": got " << got << " expected " << expected;
        }
        std::vector<double> pre(inputs);
        if (c.op == ncclAvg && floating) {
          const double scale = inType(c.type, 1.0 / c.nranks);
          for (double& v : pre) v = inType(c.type, v * scale);
        }
        double tree = reduceAsTree(c.type, c.op, pre, 0, c.nranks);
        if (c.op == ncclAvg && !floating) tree = std::trunc(tree / c.nranks);
        ASSERT_TRUE(model.matches(tree, expected)) << dataTypeInfo(c.type).name << " tree";
      }
    }
  }
}

TEST(ValueModel, ComparisonIsExactExceptForInexactAverages) {
  for (const Case& c : everyCase()) {
    const ValueModel model(c.type, c.op, c.nranks);
    const bool floating = dataTypeInfo(c.type).valueClass == ValueClass::Floating;
    const bool inexact = c.op == ncclAvg && floating && !std::has_single_bit(static_cast<unsigned>(c.nranks));
    if (inexact) {
      EXPECT_GT(model.tolerance(1.0), 0.0);
    } else {
      EXPECT_EQ(model.tolerance(1.0), 0.0)
          << dataTypeInfo(c.type).name << " op " << c.op << " n " << c.nranks;
      EXPECT_FALSE(model.matches(model.reduced(0, 0) + 1, model.reduced(0, 0)));
    }
    EXPECT_FALSE(model.matches(std::nan(""), model.reduced(0, 0)));
  }
}

TEST(ValueModel, InputsVaryByRankAndIndex) {
  // Copies must tell ranks apart, or a misplaced piece would go unnoticed.
  for (const DataTypeInfo& info : allDataTypes()) {
    const ValueModel model(info.type, std::nullopt, 8);
    for (std::size_t index = 0; index < 20; ++index) {
      std::vector<double> column;
      for (int r = 0; r < 8; ++r) column.push_back(model.input(r, index, 0));
      std::sort(column.begin(), column.end());
      EXPECT_EQ(std::adjacent_find(column.begin(), column.end()), column.end()) << info.name;
    }
    EXPECT_NE(model.input(0, 0, 0), model.input(0, 1, 0)) << info.name;
    EXPECT_NE(model.input(0, 0, 0), model.input(0, 0, 1)) << info.name;
  }
}

// Expected results must not repeat along the buffer: a block of the result
// written to the wrong place (a reduce-scatter block of another rank, a
// chunk shifted by a power of two) has to show as wrong. Before, inputs
// repeated every L/K elements, and where the ranks covered every residue
// every index had the same sum.
TEST(ValueModel, AMisplacedBlockOfTheResultShows) {
  struct Shifted {
    ncclDataType_t type;
    std::optional<ncclRedOp_t> op;
    int nranks;
    std::size_t shift;
  };
  const Shifted cases[] = {
      {ncclFloat32, ncclSum, 2, std::size_t{1} << 19}, {ncclFloat32, ncclSum, 2, std::size_t{4} << 20},
      {ncclBfloat16, ncclSum, 16, 256},                 {ncclFloat16, ncclSum, 64, 4096},
      {ncclFloat8e4m3, ncclSum, 4, 64},                 {ncclFloat8e5m2, ncclSum, 4, 64},
      {ncclInt8, ncclSum, 10, 120},                     {ncclFloat8e5m2, std::nullopt, 8, 9},
      // As many ranks as fp8 sums exactly or more: every input is 1, so the
      // count of contributors has to vary.
      {ncclFloat8e5m2, ncclSum, 8, 64},                 {ncclFloat8e5m2, ncclSum, 40, 7},
      {ncclFloat8e4m3, ncclSum, 16, 3},                 {ncclFloat8e4m3, ncclAvg, 32, 1},
      {ncclInt32, ncclMax, 3, std::size_t{1} << 20},    {ncclFloat64, ncclProd, 5, 1 << 12},
  };
  for (const Shifted& c : cases) {
    const ValueModel model(c.type, c.op, c.nranks);
    int differ = 0;
    constexpr int kSamples = 1000;
    for (std::size_t i = 0; i < kSamples; ++i) {
      const bool copies = !c.op;
      const double here = copies ? model.input(1, i, 0) : model.reduced(i, 0);
      const double there = copies ? model.input(1, i + c.shift, 0) : model.reduced(i + c.shift, 0);
      differ += here != there ? 1 : 0;
    }
    EXPECT_GT(differ, kSamples / 2) << dataTypeInfo(c.type).name << ", " << c.nranks << " ranks, shift " << c.shift
                                    << ": " << differ << " of " << kSamples << " elements differ";
  }
}

// An all-gather or gather that swaps two ranks' pieces must show, however
// many ranks there are: past L + 1 ranks, values must repeat at each index,
// but no two ranks may hold the same array.
TEST(ValueModel, NoTwoRanksHoldTheSameArray) {
  for (const ncclDataType_t type : {ncclFloat8e5m2, ncclFloat8e4m3, ncclInt8}) {
    const int n = 64;
    const ValueModel model(type, std::nullopt, n);
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        int differ = 0;
        for (std::size_t i = 0; i < 256; ++i) differ += model.input(a, i, 0) != model.input(b, i, 0) ? 1 : 0;
        EXPECT_GT(differ, 128) << dataTypeInfo(type).name << ": ranks " << a << " and " << b;
      }
    }
  }
}

// Copies, min and max see negative numbers in every type that has them, so
// that a signed type reduced as unsigned shows; a signed integer never
// holds -1, the all-ones pattern of an element never written.
TEST(ValueModel, SignedTypesGetNegativeValues) {
  for (const DataTypeInfo& info : allDataTypes()) {
    for (const std::optional<ncclRedOp_t> op : {std::optional<ncclRedOp_t>{}, std::optional{ncclMin},
                                                 std::optional{ncclMax}}) {
      const ValueModel model(info.type, op, 4);
      int negative = 0;
      for (int r = 0; r < 4; ++r) {
        for (std::size_t i = 0; i < 200; ++i) {
          const double value = model.input(r, i, 0);
          negative += value < 0 ? 1 : 0;
          EXPECT_EQ(inType(info.type, value), value) << info.name;
          if (info.valueClass == ValueClass::SignedInteger) EXPECT_NE(value, -1.0) << info.name;
        }
      }
      if (info.valueClass == ValueClass::UnsignedInteger) {
        EXPECT_EQ(negative, 0) << info.name;
      } else {
        EXPECT_GT(negative, 200) << info.name;
      }
    }
  }
}

TEST(ValueModel, EveryRankContributesToSums) {
  // Even with more ranks than the type can sum exactly, each rank is
  // non-zero somewhere in any n consecutive elements.
  const int n = 40;
  const ValueModel model(ncclFloat8e5m2, ncclSum, n);
  for (int r = 0; r < n; ++r) {
    bool contributes = false;
    for (std::size_t index = 0; index < static_cast<std::size_t>(n); ++index) {
      contributes |= model.input(r, index, 0) != 0.0;
    }
    EXPECT_TRUE(contributes) << "rank " << r;
  }
}

}  // namespace
}  // namespace hora::perf
