// reduceHost for every (element type x reduce kind), with the loops of every
// instruction set this CPU can run, against the scalar reference of
// typed_reference.h: floating results are computed in double and rounded
// with the reference format models, integer results in 128-bit integers and
// wrapped explicitly. Every combination runs over counts that hit the vector
// loops' remainders, pointers offset by one element, in-place calls both
// ways, no remote operand, and finalize on and off; guard elements around dst
// must stay untouched.
#include "kernels/reduce_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_isa.h"
#include "typed_reference.h"

namespace hora::kernels::testing {
namespace {

// ---- Layouts ----

enum class Layout { OutOfPlace, InPlaceLocal, InPlaceRemote, NoRemote, NoRemoteInPlace };
constexpr Layout kLayouts[] = {Layout::OutOfPlace, Layout::InPlaceLocal, Layout::InPlaceRemote,
                               Layout::NoRemote, Layout::NoRemoteInPlace};
const char* layoutName(Layout layout) {
  switch (layout) {
    case Layout::OutOfPlace: return "out-of-place";
    case Layout::InPlaceLocal: return "dst==local";
    case Layout::InPlaceRemote: return "dst==remote";
    case Layout::NoRemote: return "no-remote";
    case Layout::NoRemoteInPlace: return "no-remote dst==local";
  }
  return "?";
}

// Element offsets of dst/local/remote from a 64-byte aligned base: all
// aligned, all one element off (a float at an address = 4 mod 16), mixed.
struct Offsets {
  std::size_t dst, local, remote;
};
constexpr Offsets kOffsets[] = {{0, 0, 0}, {1, 1, 1}, {1, 0, 3}};

constexpr std::size_t kCounts[] = {0, 1, 7, 1023, 4099};
constexpr std::size_t kGuard = 8;  // elements checked untouched around dst

// A buffer with guard elements on both sides, at a 64-byte aligned base.
template <typename T>
class GuardedBuffer {
 public:
  GuardedBuffer(std::size_t count, std::size_t offset)
      : storage_((count + offset + 2 * kGuard) * sizeof(T) + 64), count_(count), offset_(offset) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    base_ = storage_.data() + (64 - address % 64) % 64;
    std::fill(storage_.begin(), storage_.end(), std::byte{0xA5});
  }
  T* data() { return reinterpret_cast<T*>(base_) + kGuard + offset_; }
  void fill(const std::vector<T>& values) {
    if (count_ > 0) std::memcpy(static_cast<void*>(data()), values.data(), count_ * sizeof(T));
  }
  std::vector<T> read() {
    std::vector<T> values(count_);
    if (count_ > 0)
      std::memcpy(values.data(), static_cast<const void*>(data()), count_ * sizeof(T));
    return values;
  }
  bool guardsIntact() const {
    const std::size_t head = (kGuard + offset_) * sizeof(T);
    const std::size_t tail = kGuard * sizeof(T);
    const std::byte* begin = base_;
    const std::byte* end = base_ + head + count_ * sizeof(T);
    return std::all_of(begin, begin + head, [](std::byte b) { return b == std::byte{0xA5}; }) &&
           std::all_of(end, end + tail, [](std::byte b) { return b == std::byte{0xA5}; });
  }

 private:
  std::vector<std::byte> storage_;
  std::byte* base_;
  std::size_t count_;
  std::size_t offset_;
};

template <typename T>
class ReduceHostTest : public ::testing::Test {};
TYPED_TEST_SUITE(ReduceHostTest, ElementTypes);

// One reduceHostWithIsa call on fresh guarded buffers, checked element by
// element; returns false after reporting the first few mismatches.
template <typename T>
bool reduceAndCheck(HostIsa isa, ReduceKind kind, const std::vector<T>& localValues,
                    const std::vector<T>& remoteValues, Layout layout, const Offsets& offsets,
                    bool finalize) {
  const std::size_t count = localValues.size();
  const ReduceSpec spec = specFor<T>(kind);
  SCOPED_TRACE(std::string(hostIsaName(isa)) + " " + kindName(kind) +
               " count=" + std::to_string(count) + " " + layoutName(layout) +
               " offsets=" + std::to_string(offsets.dst) + "/" + std::to_string(offsets.local) +
               "/" + std::to_string(offsets.remote) + " finalize=" + (finalize ? "true" : "false"));
  GuardedBuffer<T> dstBuffer(count, offsets.dst);
  GuardedBuffer<T> localBuffer(count, offsets.local);
  GuardedBuffer<T> remoteBuffer(count, offsets.remote);
  localBuffer.fill(localValues);
  remoteBuffer.fill(remoteValues);
  const bool hasRemote = layout != Layout::NoRemote && layout != Layout::NoRemoteInPlace;
  GuardedBuffer<T>* out = &dstBuffer;
  if (layout == Layout::InPlaceLocal || layout == Layout::NoRemoteInPlace) out = &localBuffer;
  if (layout == Layout::InPlaceRemote) out = &remoteBuffer;

  reduceHostWithIsa(isa, spec, out->data(), localBuffer.data(),
                    hasRemote ? remoteBuffer.data() : nullptr, count, finalize);

  if (!out->guardsIntact()) {
    ADD_FAILURE() << "reduceHost wrote outside dst[0, count)";
    return false;
  }
  const std::vector<T> got = out->read();
  int failures = 0;
  for (std::size_t i = 0; i < count && failures < 5; ++i) {
    const T want =
        referenceStep<T>(kind, localValues[i], hasRemote ? &remoteValues[i] : nullptr, finalize);
    std::string why;
    if (!matchesReference(got[i], want, kind, why)) {
      ADD_FAILURE() << "element " << i << ": " << why;
      ++failures;
    }
  }
  return failures == 0;
}

TYPED_TEST(ReduceHostTest, EveryKindMatchesTheReference) {
  using T = TypeParam;
  std::mt19937_64 random(static_cast<std::uint64_t>(dataTypeOf<T>()) * 7919 + 17);
  for (HostIsa isa : availableIsas()) {
    for (ReduceKind kind : kKinds) {
      for (std::size_t count : kCounts) {
        std::vector<T> localValues(count), remoteValues(count);
        for (auto& v : localValues) v = randomElement<T>(random);
        for (auto& v : remoteValues) v = randomElement<T>(random);
        for (Layout layout : kLayouts) {
          for (const Offsets& offsets : kOffsets) {
            for (bool finalize : {false, true}) {
              if (!reduceAndCheck(isa, kind, localValues, remoteValues, layout, offsets,
                                  finalize)) {
                return;
              }
            }
          }
        }
      }
    }
  }
}

// Stronger than matching the reference: the instruction sets agree on every
// bit (up to which NaN) over inputs that hit every special value.
TYPED_TEST(ReduceHostTest, InstructionSetsAgreeBitForBit) {
  using T = TypeParam;
  const std::vector<HostIsa> isas = availableIsas();
  if (isas.size() < 2) GTEST_SKIP() << "only the baseline loops run on this CPU";
  std::mt19937_64 random(99);
  const std::size_t count = 70000;
  std::vector<T> local(count), remote(count);
  for (auto& v : local) v = randomElement<T>(random);
  for (auto& v : remote) v = randomElement<T>(random);
  for (ReduceKind kind : kKinds) {
    for (bool withRemote : {true, false}) {
      const ReduceSpec spec = specFor<T>(kind);
      std::vector<std::vector<T>> results;
      for (HostIsa isa : isas) {
        std::vector<T> out(count);
        reduceHostWithIsa(isa, spec, out.data(), local.data(), withRemote ? remote.data() : nullptr,
                          count, true);
        results.push_back(std::move(out));
      }
      for (std::size_t r = 1; r < results.size(); ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(sameBitsOrBothNan(results[0][i], results[r][i]))
              << kindName(kind) << (withRemote ? "" : " without remote") << ": "
              << hostIsaName(isas[0]) << " and " << hostIsaName(isas[r]) << " differ at element "
              << i << ": bits " << rawBits(results[0][i]) << " vs " << rawBits(results[r][i]);
        }
      }
    }
  }
}

// reduceHostUnchecked runs the same loops as reduceHost, minus the checks:
// on the same arguments, and slice by slice as an executor calls it after
// checking a whole operation once, it writes exactly the same bytes (NaNs
// included: the same code computes them).
TYPED_TEST(ReduceHostTest, UncheckedVariantWritesTheSameBytes) {
  using T = TypeParam;
  std::mt19937_64 random(static_cast<std::uint64_t>(dataTypeOf<T>()) * 104729 + 5);
  const std::size_t count = 4099;  // leaves remainders in every vector loop
  const std::size_t slice = 1000;  // slices that start one element off alignment
  std::vector<T> local(count), remote(count);
  for (auto& v : local) v = randomElement<T>(random);
  for (auto& v : remote) v = randomElement<T>(random);
  for (ReduceKind kind : kKinds) {
    const ReduceSpec spec = specFor<T>(kind);
    for (bool withRemote : {true, false}) {
      for (bool finalize : {false, true}) {
        SCOPED_TRACE(std::string(kindName(kind)) + (withRemote ? "" : " without remote") +
                     (finalize ? " finalize" : ""));
        const T* remoteData = withRemote ? remote.data() : nullptr;
        std::vector<T> checked(count), whole(count), sliced(count);
        reduceHost(spec, checked.data(), local.data(), remoteData, count, finalize);
        reduceHostUnchecked(spec, whole.data(), local.data(), remoteData, count, finalize);
        for (std::size_t done = 1; done < count; done += slice) {
          const std::size_t n = std::min(slice, count - done);
          reduceHostUnchecked(spec, sliced.data() + done, local.data() + done,
                              withRemote ? remoteData + done : nullptr, n, finalize);
        }
        reduceHostUnchecked(spec, sliced.data(), local.data(), remoteData, 1, finalize);
        EXPECT_EQ(std::memcmp(checked.data(), whole.data(), count * sizeof(T)), 0);
        EXPECT_EQ(std::memcmp(checked.data(), sliced.data(), count * sizeof(T)), 0);
        // In place, as the ring reduces into its own buffer.
        std::vector<T> inPlace = local;
        reduceHostUnchecked(spec, inPlace.data(), inPlace.data(), remoteData, count, finalize);
        EXPECT_EQ(std::memcmp(checked.data(), inPlace.data(), count * sizeof(T)), 0);
      }
    }
  }
}

// ---- Edge cases the random inputs are unlikely to hit ----

template <typename T>
std::vector<T> reduce(ReduceKind kind, std::uint64_t scalarBits, std::vector<T> local,
                      const std::vector<T>& remote, bool finalize = true) {
  reduceHost(ReduceSpec{dataTypeOf<T>(), kind, scalarBits}, local.data(), local.data(),
             remote.data(), local.size(), finalize);
  return local;
}

TEST(ReduceHostEdges, IntegerSumAndProdWrap) {
  EXPECT_EQ(reduce<std::int8_t>(ReduceKind::Sum, 0, {127, -128}, {1, -1}),
            (std::vector<std::int8_t>{-128, 127}));
  EXPECT_EQ(reduce<std::uint8_t>(ReduceKind::Prod, 0, {16, 255}, {16, 255}),
            (std::vector<std::uint8_t>{0, 1}));
  constexpr auto kMax32 = std::numeric_limits<std::int32_t>::max();
  EXPECT_EQ(reduce<std::int32_t>(ReduceKind::Sum, 0, {kMax32}, {1}),
            (std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min()}));
  constexpr auto kMax64 = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(reduce<std::int64_t>(ReduceKind::Prod, 0, {kMax64}, {2}),
            (std::vector<std::int64_t>{-2}));
}

TEST(ReduceHostEdges, SignedAverageTruncatesTowardZero) {
  EXPECT_EQ(reduce<std::int32_t>(ReduceKind::SumPostDiv, 2, {-7, 7, -1}, {0, 0, 0}),
            (std::vector<std::int32_t>{-3, 3, 0}));
  EXPECT_EQ(reduce<std::int8_t>(ReduceKind::SumPostDiv, 1000, {-128, 127}, {0, 0}),
            (std::vector<std::int8_t>{0, 0}));
  constexpr auto kMin64 = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(
      reduce<std::int64_t>(ReduceKind::SumPostDiv, std::uint64_t{1} << 63, {kMin64, -5}, {0, 0}),
      (std::vector<std::int64_t>{-1, 0}));
  EXPECT_EQ(reduce<std::int64_t>(ReduceKind::SumPostDiv, 1, {kMin64}, {0}),
            (std::vector<std::int64_t>{kMin64}));
  EXPECT_EQ(reduce<std::uint32_t>(ReduceKind::SumPostDiv, 1, {0xffffffffu}, {0}),
            (std::vector<std::uint32_t>{0xffffffffu}));
  EXPECT_EQ(reduce<std::uint64_t>(ReduceKind::SumPostDiv, 7, {~std::uint64_t{0}}, {0}),
            (std::vector<std::uint64_t>{~std::uint64_t{0} / 7}));
}

TEST(ReduceHostEdges, DivisionMatchesIntegerDivisionForEveryInt8AndManyDivisors) {
  std::vector<std::int8_t> values;
  for (int v = -128; v <= 127; ++v) values.push_back(static_cast<std::int8_t>(v));
  const std::vector<std::int8_t> zeros(values.size(), 0);
  for (std::uint64_t divisor :
       {1ull, 2ull, 3ull, 7ull, 127ull, 128ull, 129ull, 255ull, 256ull, 1ull << 40, ~0ull}) {
    const auto got = reduce<std::int8_t>(ReduceKind::SumPostDiv, divisor, values, zeros);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto want = static_cast<std::int8_t>(static_cast<__int128>(values[i]) /
                                                 static_cast<__int128>(divisor));
      ASSERT_EQ(got[i], want) << int{values[i]} << " / " << divisor;
    }
  }
}

TEST(ReduceHostEdges, Int32DivisionIsExactAtTheExtremes) {
  constexpr auto kMin = std::numeric_limits<std::int32_t>::min();
  constexpr auto kMax = std::numeric_limits<std::int32_t>::max();
  std::mt19937_64 random(5);
  std::vector<std::int32_t> values = {kMin, kMin + 1, kMax, kMax - 1, -1, 0, 1};
  for (int i = 0; i < 2000; ++i) values.push_back(static_cast<std::int32_t>(random()));
  const std::vector<std::int32_t> zeros(values.size(), 0);
  for (std::uint64_t divisor : {1ull, 3ull, 10ull, 65535ull, 2147483647ull, 2147483648ull,
                                4294967295ull, 4294967296ull, (1ull << 53) + 1, ~0ull}) {
    const auto got = reduce<std::int32_t>(ReduceKind::SumPostDiv, divisor, values, zeros);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto want = static_cast<std::int32_t>(static_cast<__int128>(values[i]) /
                                                  static_cast<__int128>(divisor));
      ASSERT_EQ(got[i], want) << values[i] << " / " << divisor;
    }
  }
}

// As NCCL's kernels (fmaxf, __hmax): NaN loses to a number on either
// side, in every lane of the vector loops (33 elements: whole vectors and a
// tail), and is the result only where both operands are NaN.
TEST(ReduceHostEdges, FloatMaxAndMinIgnoreANanOnEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceKind kind : {ReduceKind::Max, ReduceKind::Min}) {
    std::vector<float> local(33), remote(33);
    for (std::size_t i = 0; i < local.size(); ++i) {
      local[i] = i % 3 == 0 ? nan : 1.0f;
      remote[i] = i % 3 == 1 ? nan : 1.0f;
    }
    const auto got = reduce<float>(kind, 0, local, remote);
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 1.0f) << kindName(kind) << " element " << i;
    const auto both = reduce<float>(kind, 0, {nan}, {nan});
    EXPECT_TRUE(std::isnan(both[0])) << kindName(kind);
    const auto half =
        reduce<float16>(kind, 0, {float16(nan), float16(2.0f)}, {float16(2.0f), float16(nan)});
    for (float16 value : half) EXPECT_EQ(static_cast<float>(value), 2.0f) << kindName(kind);
  }
  EXPECT_EQ(reduce<float>(ReduceKind::Max, 0, {-1.0f, 3.0f}, {2.0f, -4.0f}),
            (std::vector<float>{2.0f, 3.0f}));
  EXPECT_EQ(reduce<float>(ReduceKind::Min, 0, {-1.0f, 3.0f}, {2.0f, -4.0f}),
            (std::vector<float>{-1.0f, -4.0f}));
}

TEST(ReduceHostEdges, NarrowFloatArithmeticRoundsOnceFromFloat) {
  // 3 * half(1/3) = 1 - 2^-12 exactly in float; plus 1.5 * 2^-11 that is
  // 1 + 2^-11, a tie that rounds to 1. Rounding the product to half first
  // would give 1 (a tie, to even), and then 1 + 1.5 * 2^-11 rounds up to the
  // next half, 1 + 2^-10 (pattern 0x3c01).
  const auto sum = reduce<float16>(ReduceKind::PreMulSum, rawBits(float16(1.0f / 3.0f)),
                                   {float16(3.0f)}, {float16(0x1.8p-11f)});
  EXPECT_EQ(sum[0].bits, 0x3c00);
  // fp8 saturates instead of overflowing; float16 overflows to infinity.
  const auto big = reduce<fp8_e4m3>(ReduceKind::Sum, 0, {fp8_e4m3(448.0f)}, {fp8_e4m3(448.0f)});
  EXPECT_EQ(big[0].bits, 0x7e);
  const auto halfInf =
      reduce<float16>(ReduceKind::Sum, 0, {float16(65504.0f)}, {float16(65504.0f)});
  EXPECT_EQ(halfInf[0].bits, 0x7c00);
  // A two-rank bfloat16 average: each input pre-multiplied by 1/2, summed.
  const auto avg = reduce<bfloat16>(ReduceKind::PreMulSum, rawBits(bfloat16(0.5f)),
                                    {bfloat16(3.0f)}, {bfloat16(0.5f)});
  EXPECT_EQ(static_cast<float>(avg[0]), 2.0f);
}

TEST(ReduceHostEdges, SumPostDivWithoutFinalizeIsASum) {
  EXPECT_EQ(reduce<std::int32_t>(ReduceKind::SumPostDiv, 4, {10, -10}, {6, 2}, false),
            (std::vector<std::int32_t>{16, -8}));
  EXPECT_EQ(reduce<std::int32_t>(ReduceKind::SumPostDiv, 4, {10, -10}, {6, 2}, true),
            (std::vector<std::int32_t>{4, -2}));
}

// ---- Instruction sets ----

TEST(ReduceHostIsa, TheBestAvailableIsUsedAndTheBaselineAlwaysExists) {
  EXPECT_TRUE(hostIsaAvailable(HostIsa::Baseline));
  EXPECT_TRUE(hostIsaAvailable(bestHostIsa())) << hostIsaName(bestHostIsa());
  if (hostIsaAvailable(HostIsa::Avx2)) {
    EXPECT_EQ(bestHostIsa(), HostIsa::Avx2);
  }
}

// ---- Bad input ----

TEST(ReduceHostBadInput, InvalidDataTypeThrowsNamingTheValue) {
  float a[4] = {}, b[4] = {}, d[4] = {};
  for (int value : {12, 42, -1, 255}) {
    const ReduceSpec spec{static_cast<DataType>(value), ReduceKind::Sum, 0};
    expectInvalidArgument([&] { reduceHost(spec, d, a, b, 4, false); },
                          "data type value " + std::to_string(value));
    // Even with nothing to do, a bad spec is an error.
    expectInvalidArgument([&] { reduceHost(spec, d, a, b, 0, false); }, std::to_string(value));
  }
}

TEST(ReduceHostBadInput, InvalidKindThrowsNamingTheValue) {
  float a[4] = {}, b[4] = {}, d[4] = {};
  const ReduceSpec spec{DataType::Float32, static_cast<ReduceKind>(9), 0};
  expectInvalidArgument([&] { reduceHost(spec, d, a, b, 4, false); }, "kind value 9");
}

TEST(ReduceHostBadInput, ZeroDivisorIsRejected) {
  std::int32_t a[4] = {}, b[4] = {}, d[4] = {};
  const ReduceSpec spec{DataType::Int32, ReduceKind::SumPostDiv, 0};
  expectInvalidArgument([&] { reduceHost(spec, d, a, b, 4, true); }, "divisor");
}

// A scalar by address is for the executors to read as an operation runs;
// the loops would otherwise scale by the unused scalarBits.
TEST(ReduceHostBadInput, ScalarByAddressIsRejected) {
  float a[4] = {}, b[4] = {}, d[4] = {};
  const float scalar = 2.0f;
  const ReduceSpec spec{DataType::Float32, ReduceKind::PreMulSum, 0, &scalar};
  expectInvalidArgument([&] { reduceHost(spec, d, a, b, 4, false); }, "by value");
}

TEST(ReduceHostBadInput, NullMisalignedAndOverlappingPointersAreRejected) {
  alignas(16) float a[8] = {}, b[8] = {}, d[8] = {};
  const ReduceSpec spec{DataType::Float32, ReduceKind::Sum, 0};
  expectInvalidArgument([&] { reduceHost(spec, nullptr, a, b, 4, false); }, "dst is null");
  expectInvalidArgument([&] { reduceHost(spec, d, nullptr, b, 4, false); }, "local is null");
  reduceHost(spec, nullptr, nullptr, nullptr, 0, false);  // nothing to do: fine
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(d) + 2);
  expectInvalidArgument([&] { reduceHost(spec, misaligned, a, b, 4, false); }, "not aligned");
  expectInvalidArgument([&] { reduceHost(spec, a + 1, a, b, 4, false); }, "overlaps local");
  expectInvalidArgument([&] { reduceHost(spec, b, a, b + 2, 4, false); }, "overlaps remote");
}

}  // namespace
}  // namespace hora::kernels::testing
