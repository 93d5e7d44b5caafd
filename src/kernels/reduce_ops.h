// Reduction functors: the per-element arithmetic of every collective, shared
// by the CPU executor and (later) CUDA kernels.
//
// Each functor is templated on the element type T and works on two levels:
//   - apply(): on Compute<T>, the type the arithmetic happens in. For the
//     16-bit and 8-bit floating types that is float; for every other type it
//     is T itself. Loops that chain several steps (pre-multiply, combine,
//     post-divide) stay in Compute<T> and round to T once, at the end.
//   - operator(): on T, for callers that want one step (load, apply, store).
// Element semantics:
//   - floating Sum/Prod/PreMul/PostDiv: IEEE arithmetic in Compute<T>;
//   - integer Sum/Prod/PreMul: wrap modulo 2^bits (done in the unsigned type,
//     so signed overflow is never undefined behaviour);
//   - integer PostDiv: truncates toward zero, like C++ division;
//   - floating Max/Min: as NCCL's kernels (fmaxf, __hmax), a NaN operand
//     (quiet or signalling) loses to a number, NaN only where both are;
//     between +0 and -0 either may be returned.
// A CUDA compiler may contract a pre-multiply and the sum that follows into
// one fused multiply-add, rounding once instead of twice; for the 16-bit and
// 8-bit types the product is exact in float, so their results do not change.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/host_device.h"
#include "kernels/dtypes.h"

namespace hora::kernels {

// ---- Where arithmetic happens, and how values get there and back ----

template <typename T>
struct Arithmetic {
  using Compute = T;
  HORA_HOST_DEVICE static constexpr Compute load(T value) { return value; }
  HORA_HOST_DEVICE static constexpr T store(Compute value) { return value; }
};

template <typename T>
struct NarrowFloatArithmetic {
  using Compute = float;
  HORA_HOST_DEVICE static constexpr float load(T value) { return static_cast<float>(value); }
  HORA_HOST_DEVICE static constexpr T store(float value) { return T(value); }
};
template <>
struct Arithmetic<float16> : NarrowFloatArithmetic<float16> {};
template <>
struct Arithmetic<bfloat16> : NarrowFloatArithmetic<bfloat16> {};
template <>
struct Arithmetic<fp8_e4m3> : NarrowFloatArithmetic<fp8_e4m3> {};
template <>
struct Arithmetic<fp8_e5m2> : NarrowFloatArithmetic<fp8_e5m2> {};

template <typename T>
using Compute = typename Arithmetic<T>::Compute;

// Integer arithmetic in the unsigned type of the same width, promoted to at
// least `unsigned` so that narrow types never promote to (signed) int and
// overflow there. The conversion back to T is modular (defined since C++20).
template <typename T>
using WrapType = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

template <typename T>
HORA_HOST_DEVICE constexpr T wrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  } else {
    return a + b;
  }
}

template <typename T>
HORA_HOST_DEVICE constexpr T wrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  } else {
    return a * b;
  }
}

// Shared by every functor: the one-step form on T.
template <typename T, typename Derived>
struct BinaryOnElements {
  HORA_HOST_DEVICE constexpr T operator()(T a, T b) const {
    using A = Arithmetic<T>;
    return A::store(Derived::apply(A::load(a), A::load(b)));
  }
};

// ---- Combining functors ----

template <typename T>
struct FuncSum : BinaryOnElements<T, FuncSum<T>> {
  HORA_HOST_DEVICE static constexpr Compute<T> apply(Compute<T> a, Compute<T> b) {
    return wrappingAdd(a, b);
  }
};

template <typename T>
struct FuncProd : BinaryOnElements<T, FuncProd<T>> {
  HORA_HOST_DEVICE static constexpr Compute<T> apply(Compute<T> a, Compute<T> b) {
    return wrappingMul(a, b);
  }
};

// For floating types, `b != b` is true only for NaN: a NaN `b` gives `a`,
// and a NaN `a` fails both tests and gives `b`, so a number wins over NaN
// whichever side it is on (the rule of NCCL's kernels; glibc's fmax
// differs only for a signalling NaN). The selects vectorize (no branches).
template <typename T>
struct FuncMax : BinaryOnElements<T, FuncMax<T>> {
  HORA_HOST_DEVICE static constexpr Compute<T> apply(Compute<T> a, Compute<T> b) {
    return (a > b || b != b) ? a : b;
  }
};

template <typename T>
struct FuncMin : BinaryOnElements<T, FuncMin<T>> {
  HORA_HOST_DEVICE static constexpr Compute<T> apply(Compute<T> a, Compute<T> b) {
    return (a < b || b != b) ? a : b;
  }
};

// ---- Steps before and after combining ----

// The identity, for kinds without a pre- or post-step; loops test for it at
// compile time and skip the work.
template <typename T>
struct FuncIdentity {
  HORA_HOST_DEVICE constexpr Compute<T> apply(Compute<T> value) const { return value; }
};

// PreMulSum's pre-step: each rank's input times a scalar (1/nranks for
// floating Avg, or the user's scalar from ncclRedOpCreatePreMulSum).
template <typename T>
struct FuncPreMul {
  Compute<T> scalar;

  HORA_HOST_DEVICE constexpr explicit FuncPreMul(T scalarValue)
      : scalar(Arithmetic<T>::load(scalarValue)) {}
  HORA_HOST_DEVICE constexpr Compute<T> apply(Compute<T> value) const {
    return wrappingMul(value, scalar);
  }
  HORA_HOST_DEVICE constexpr T operator()(T value) const {
    return Arithmetic<T>::store(apply(Arithmetic<T>::load(value)));
  }
};

// SumPostDiv's post-step: the reduced sum divided by a count (integer Avg).
// The divisor is at least 1 (callers check).
template <typename T>
struct FuncPostDiv {
  std::uint64_t divisor;

  HORA_HOST_DEVICE constexpr explicit FuncPostDiv(std::uint64_t divisorValue)
      : divisor(divisorValue) {}

  HORA_HOST_DEVICE constexpr Compute<T> apply(Compute<T> value) const {
    using C = Compute<T>;
    if constexpr (!std::is_integral_v<C>) {
      return value / static_cast<C>(divisor);
    } else if constexpr (sizeof(C) <= 4) {
      // Integers of at most 32 bits divide in double, which CPUs do in SIMD
      // lanes where integer division has no SIMD form at all. Truncating the
      // rounded double quotient is exact: |value| < 2^32, and a non-integer
      // quotient is at least 1/divisor away from the next integer, far more
      // than the double's rounding error. Divisors beyond 2^53 (inexact in
      // double) give 0 both ways.
      // Converting through int32 where the quotient fits keeps that step in
      // SIMD lanes too (SSE2 converts doubles to int32, not to int64).
      using Truncated =
          std::conditional_t<std::is_same_v<C, std::uint32_t>, std::int64_t, std::int32_t>;
      const double quotient = static_cast<double>(value) / static_cast<double>(divisor);
      return static_cast<C>(static_cast<Truncated>(quotient));
    } else if constexpr (std::is_unsigned_v<C>) {
      return value / divisor;
    } else {
      // Divide magnitudes so that no divisor (even one above INT64_MAX) and
      // no value (even INT64_MIN) overflows; then restore the sign.
      const std::uint64_t magnitude =
          value < 0 ? 0u - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
      const std::uint64_t quotient = magnitude / divisor;
      return static_cast<C>(value < 0 ? 0u - quotient : quotient);
    }
  }
  HORA_HOST_DEVICE constexpr T operator()(T value) const {
    return Arithmetic<T>::store(apply(Arithmetic<T>::load(value)));
  }
};

}  // namespace hora::kernels
