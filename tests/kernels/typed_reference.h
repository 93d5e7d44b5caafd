// What the reduceHost and reduceHostMany suites share: the element types and
// how to name, decode and draw them, the reduce kinds with the operands the
// suites use (the pre-multiplication scalar, the divisor), and a scalar
// reference for one reduction step, written independently of src/kernels.
// reduceHostMany promises the bits of a chain of reduceHost calls, so both
// suites check against the same step: dst = post(combine(pre(local), remote)),
// floating steps computed in double and rounded explicitly (with the
// reference format models for the narrow types), integer steps in 128 bits
// and wrapped.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "hora/communicator.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_isa.h"
#include "reference_formats.h"

namespace hora::kernels::testing {

// ---- Element types ----

template <typename T>
inline constexpr bool kIsNarrowFloat = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> ||
                                       std::is_same_v<T, fp8_e4m3> || std::is_same_v<T, fp8_e5m2>;

template <typename T>
constexpr DataType dataTypeOf() {
  if constexpr (std::is_same_v<T, std::int8_t>) return DataType::Int8;
  if constexpr (std::is_same_v<T, std::uint8_t>) return DataType::Uint8;
  if constexpr (std::is_same_v<T, std::int32_t>) return DataType::Int32;
  if constexpr (std::is_same_v<T, std::uint32_t>) return DataType::Uint32;
  if constexpr (std::is_same_v<T, std::int64_t>) return DataType::Int64;
  if constexpr (std::is_same_v<T, std::uint64_t>) return DataType::Uint64;
  if constexpr (std::is_same_v<T, float16>) return DataType::Float16;
  if constexpr (std::is_same_v<T, float>) return DataType::Float32;
  if constexpr (std::is_same_v<T, double>) return DataType::Float64;
  if constexpr (std::is_same_v<T, bfloat16>) return DataType::Bfloat16;
  if constexpr (std::is_same_v<T, fp8_e4m3>) return DataType::Float8e4m3;
  if constexpr (std::is_same_v<T, fp8_e5m2>) return DataType::Float8e5m2;
}

// The reference model of a narrow floating type.
template <typename T>
const FormatModel& formatOf() {
  if constexpr (std::is_same_v<T, float16>) return kFloat16Model;
  if constexpr (std::is_same_v<T, bfloat16>) return kBfloat16Model;
  if constexpr (std::is_same_v<T, fp8_e4m3>) return kE4m3Model;
  if constexpr (std::is_same_v<T, fp8_e5m2>) return kE5m2Model;
}

// Built once per type: building one tabulates every finite value.
template <typename T>
const ReferenceRounder& rounderOf() {
  static const ReferenceRounder rounder(formatOf<T>());
  return rounder;
}

template <typename T>
std::uint64_t rawBits(T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));  // the low bytes on little-endian hosts
  return bits;
}

template <typename T>
double toDouble(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    return formatOf<T>().decode(value.bits);
  } else {
    return static_cast<double>(value);
  }
}

// Every element type the kernels reduce, for typed test suites.
using ElementTypes =
    ::testing::Types<std::int8_t, std::uint8_t, std::int32_t, std::uint32_t, std::int64_t,
                     std::uint64_t, float16, float, double, bfloat16, fp8_e4m3, fp8_e5m2>;

// ---- Reduce kinds and their operands ----

inline constexpr ReduceKind kKinds[] = {ReduceKind::Sum,       ReduceKind::Prod,
                                        ReduceKind::Max,       ReduceKind::Min,
                                        ReduceKind::PreMulSum, ReduceKind::SumPostDiv};

inline const char* kindName(ReduceKind kind) {
  static const char* const kNames[] = {"Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"};
  return kNames[static_cast<int>(kind)];
}

inline constexpr std::uint64_t kDivisor = 3;

// PreMulSum's scalar: negative for signed integers (so products change
// sign), otherwise a third, which no binary format holds exactly.
template <typename T>
T preMulScalar() {
  if constexpr (std::is_integral_v<T>) {
    return std::is_signed_v<T> ? static_cast<T>(-3) : static_cast<T>(3);
  } else if constexpr (kIsNarrowFloat<T>) {
    return T(1.0f / 3.0f);
  } else {
    return T(1) / T(3);
  }
}

template <typename T>
ReduceSpec specFor(ReduceKind kind) {
  return ReduceSpec{dataTypeOf<T>(), kind,
                    kind == ReduceKind::SumPostDiv ? kDivisor : rawBits(preMulScalar<T>())};
}

// ---- Floating reference: exact values in double, explicit rounding ----

// Rounds to the type arithmetic happens in: float for all but double.
// Rounding an exact (or double-computed) sum, product or quotient of two
// floats to float this way is correctly rounded: double has more than
// 2 * 24 + 2 bits of precision, so double rounding cannot go wrong.
template <typename T>
double roundToCompute(double value) {
  if constexpr (std::is_same_v<T, double>) {
    return value;
  } else {
    return static_cast<double>(static_cast<float>(value));
  }
}

template <typename T>
T roundToElement(double value) {
  if constexpr (kIsNarrowFloat<T>) {
    using Bits = decltype(T{}.bits);
    return T::fromBits(static_cast<Bits>(rounderOf<T>().round(value)));
  } else {
    return static_cast<T>(value);
  }
}

// One step with arithmetic, before rounding to the element type.
template <typename T>
double referenceFloating(ReduceKind kind, double local, const double* remote, bool finalize) {
  double value = local;
  if (kind == ReduceKind::PreMulSum) value = roundToCompute<T>(value * toDouble(preMulScalar<T>()));
  if (remote != nullptr) {
    const double other = *remote;
    switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::PreMulSum:
      case ReduceKind::SumPostDiv: value = roundToCompute<T>(value + other); break;
      case ReduceKind::Prod: value = roundToCompute<T>(value * other); break;
      // A NaN operand loses to a number (NCCL's fmaxf and __hmax), a
      // signalling NaN too (where glibc's fmax would return NaN).
      case ReduceKind::Max:
        value = std::isnan(other) ? value : std::isnan(value) ? other : std::max(value, other);
        break;
      case ReduceKind::Min:
        value = std::isnan(other) ? value : std::isnan(value) ? other : std::min(value, other);
        break;
    }
  }
  if (kind == ReduceKind::SumPostDiv && finalize) {
    value = roundToCompute<T>(value / roundToCompute<T>(static_cast<double>(kDivisor)));
  }
  return value;
}

// ---- Integer reference: exact in 128 bits, wrapped to the type ----

// Products of two 64-bit values need all 128 bits, so they are formed in the
// unsigned 128-bit type (where overflow is modular, never undefined); the
// low bits, which are all that wrapping keeps, are the same either way.
template <typename T>
T wrap(unsigned __int128 value) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(value));
}

template <typename T>
unsigned __int128 wide(T value) {
  return static_cast<unsigned __int128>(static_cast<__int128>(value));
}

template <typename T>
T referenceInteger(ReduceKind kind, T local, const T* remote, bool finalize) {
  T value = local;
  if (kind == ReduceKind::PreMulSum) value = wrap<T>(wide(value) * wide(preMulScalar<T>()));
  if (remote != nullptr) {
    const T other = *remote;
    switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::PreMulSum:
      case ReduceKind::SumPostDiv: value = wrap<T>(wide(value) + wide(other)); break;
      case ReduceKind::Prod: value = wrap<T>(wide(value) * wide(other)); break;
      case ReduceKind::Max: value = std::max(value, other); break;
      case ReduceKind::Min: value = std::min(value, other); break;
    }
  }
  if (kind == ReduceKind::SumPostDiv && finalize) {
    // C++ division truncates toward zero; 128 bits hold every divisor.
    value = static_cast<T>(static_cast<__int128>(value) / static_cast<__int128>(kDivisor));
  }
  return value;
}

// ---- One step ----

// What dst[i] holds after reduceHost(specFor<T>(kind), dst, local, remote,
// finalize) for one element; remote null: no remote operand.
template <typename T>
T referenceStep(ReduceKind kind, T local, const T* remote, bool finalize) {
  // No arithmetic at all: the bits move unchanged, unrounded (which matters
  // for fp8_e5m2's infinities: arithmetic saturates them).
  const bool isCopy = remote == nullptr && kind != ReduceKind::PreMulSum &&
                      !(kind == ReduceKind::SumPostDiv && finalize);
  if (isCopy) return local;
  if constexpr (std::is_integral_v<T>) {
    return referenceInteger<T>(kind, local, remote, finalize);
  } else {
    const double other = remote != nullptr ? toDouble(*remote) : 0.0;
    return roundToElement<T>(referenceFloating<T>(kind, toDouble(local),
                                                  remote != nullptr ? &other : nullptr, finalize));
  }
}

// ---- Comparing results ----

// The reference's bits, or NaN both, or (Max and Min may return either zero
// when +0 and -0 meet) zero both; `why` says what differs.
template <typename T>
bool matchesReference(T got, T want, ReduceKind kind, std::string& why) {
  if constexpr (std::is_integral_v<T>) {
    if (got == want) return true;
    why = "got " + std::to_string(got) + ", want " + std::to_string(want);
    return false;
  } else {
    const double gotValue = toDouble(got);
    const double wantValue = toDouble(want);
    if (std::isnan(wantValue) && std::isnan(gotValue)) return true;
    const bool zeroSignFree =
        (kind == ReduceKind::Max || kind == ReduceKind::Min) && wantValue == 0 && gotValue == 0;
    if (rawBits(got) == rawBits(want) || zeroSignFree) return true;
    why = "got " + std::to_string(gotValue) + " (bits " + std::to_string(rawBits(got)) +
          "), want " + std::to_string(wantValue) + " (bits " + std::to_string(rawBits(want)) + ")";
    return false;
  }
}

// The same bits, or NaN both (which NaN an operation on NaNs returns, its
// sign included, depends on the order of the operands, which compilers
// choose freely for commutative operations).
template <typename T>
bool sameBitsOrBothNan(T a, T b) {
  if (rawBits(a) == rawBits(b)) return true;
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(toDouble(a)) && std::isnan(toDouble(b));
  }
}

// ---- Inputs ----

template <typename T>
T randomElement(std::mt19937_64& random) {
  if constexpr (std::is_integral_v<T>) {
    // Mostly small values (so products and averages stay meaningful), some
    // from the whole range (so sums and products wrap).
    if (random() % 4 == 0) return static_cast<T>(random());
    return static_cast<T>(static_cast<std::int64_t>(random() % 201) - 100);
  } else if constexpr (kIsNarrowFloat<T>) {
    // Every pattern, NaN, infinity and subnormals included.
    using Bits = decltype(T{}.bits);
    return T::fromBits(static_cast<Bits>(random()));
  } else {
    const std::uint64_t pick = random() % 16;
    if (pick == 0) {
      const T specials[] = {0,
                            -T(0),
                            std::numeric_limits<T>::infinity(),
                            -std::numeric_limits<T>::infinity(),
                            std::numeric_limits<T>::quiet_NaN(),
                            std::numeric_limits<T>::denorm_min(),
                            std::numeric_limits<T>::max(),
                            std::numeric_limits<T>::lowest()};
      return specials[random() % std::size(specials)];
    }
    if (pick < 4) {
      using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      return std::bit_cast<T>(static_cast<Bits>(random()));
    }
    return std::uniform_real_distribution<T>(-1000, 1000)(random);
  }
}

// ---- Running ----

// The instruction sets whose loops this CPU can run, the baseline first.
inline std::vector<HostIsa> availableIsas() {
  std::vector<HostIsa> isas;
  for (HostIsa isa : {HostIsa::Baseline, HostIsa::Avx2}) {
    if (hostIsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

// `call` must throw hora::Error(InvalidArgument) whose message mentions
// `mentions`.
template <typename Call>
void expectInvalidArgument(Call call, const std::string& mentions) {
  try {
    call();
    ADD_FAILURE() << "expected hora::Error(InvalidArgument) mentioning \"" << mentions << "\"";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << error.what();
    EXPECT_NE(std::string(error.what()).find(mentions), std::string::npos)
        << "message \"" << error.what() << "\" does not mention \"" << mentions << "\"";
  }
}

}  // namespace hora::kernels::testing
