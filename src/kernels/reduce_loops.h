// The loops behind reduceHost, written once and compiled once per
// instruction set (reduce_host_baseline.cc, reduce_host_avx2.cc). Callers
// have validated the arguments (reduce_host.cc).
//
// An instruction set is a type `Loops` with two static member templates that
// run the loops below (or faster equivalents):
//   Loops::combine<T, Combine>(buffers, pre, post)  remote != nullptr
//   Loops::transform<T>(buffers, pre, post)         remote == nullptr
// The loops are deliberately plain indexed loops, no intrinsics, no manual
// unrolling: the element conversions of dtypes.h are branch-free, so the
// compiler vectorizes every loop but the 64-bit integer prod/max/min/division
// ones (which SSE2 and AVX2 have no instructions for). Aliasing: dst may equal
// local or remote; the compiler's run-time overlap check accepts equal
// pointers (each element is read before it is written in the same
// iteration), so in-place calls take the vector path too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_ops.h"

namespace hora::kernels::loops {

template <typename T>
struct Buffers {
  T* dst;
  const T* local;
  const T* remote;  // null: no second operand
  std::size_t count;
};

template <typename F>
constexpr bool kIsIdentity = false;
template <typename T>
constexpr bool kIsIdentity<FuncIdentity<T>> = true;

// dst[i] = post(combine(pre(local[i]), remote[i])), rounded to T once.
// always_inline: the per-instruction-set wrappers must get their own copy
// of the loop, compiled for their instruction set. The buffer fields are
// copied to locals because a store through dst (a char type, for int8) could
// otherwise change them, as far as the compiler knows, and a loop whose trip
// count may change does not vectorize.
template <typename T, typename Combine, typename Pre, typename Post>
[[gnu::always_inline]] inline void combineLoop(const Buffers<T>& b, Pre pre, Post post) {
  using A = Arithmetic<T>;
  T* dst = b.dst;
  const T* local = b.local;
  const T* remote = b.remote;
  const std::size_t count = b.count;
  for (std::size_t i = 0; i < count; ++i) {
    dst[i] = A::store(post.apply(Combine::apply(pre.apply(A::load(local[i])), A::load(remote[i]))));
  }
}

// dst[i] = post(pre(local[i])): a reduction's first contribution.
template <typename T, typename Pre, typename Post>
[[gnu::always_inline]] inline void transformLoop(const Buffers<T>& b, Pre pre, Post post) {
  using A = Arithmetic<T>;
  T* dst = b.dst;
  const T* local = b.local;
  const std::size_t count = b.count;
  for (std::size_t i = 0; i < count; ++i) {
    dst[i] = A::store(post.apply(pre.apply(A::load(local[i]))));
  }
}

template <typename Loops, typename T, typename Combine, typename Pre, typename Post>
void run(const Buffers<T>& b, Pre pre, Post post) {
  if (b.remote != nullptr) {
    Loops::template combine<T, Combine>(b, pre, post);
  } else if constexpr (kIsIdentity<Pre> && kIsIdentity<Post>) {
    // Nothing to compute: a copy (overlap is either total or rejected).
    if (b.dst != b.local) std::memcpy(b.dst, b.local, b.count * sizeof(T));
  } else {
    Loops::template transform<T>(b, pre, post);
  }
}

// The PreMulSum scalar travels as T's bit pattern in the low bytes.
template <typename T>
T scalarFromBits(std::uint64_t scalarBits) {
  using Bits = std::conditional_t<
      sizeof(T) == 1, std::uint8_t,
      std::conditional_t<sizeof(T) == 2, std::uint16_t,
                         std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
  static_assert(sizeof(Bits) == sizeof(T));
  const auto raw = static_cast<Bits>(scalarBits);
  T value;
  std::memcpy(&value, &raw, sizeof(T));
  return value;
}

template <typename Loops, typename T>
void reduceTyped(const ReduceSpec& spec, const Buffers<T>& b, bool finalize) {
  const FuncIdentity<T> identity;
  switch (spec.kind) {
    case ReduceKind::Sum:
      return run<Loops, T, FuncSum<T>>(b, identity, identity);
    case ReduceKind::Prod:
      return run<Loops, T, FuncProd<T>>(b, identity, identity);
    case ReduceKind::Max:
      return run<Loops, T, FuncMax<T>>(b, identity, identity);
    case ReduceKind::Min:
      return run<Loops, T, FuncMin<T>>(b, identity, identity);
    case ReduceKind::PreMulSum:
      return run<Loops, T, FuncSum<T>>(b, FuncPreMul<T>(scalarFromBits<T>(spec.scalarBits)),
                                       identity);
    case ReduceKind::SumPostDiv:
      if (finalize) return run<Loops, T, FuncSum<T>>(b, identity, FuncPostDiv<T>(spec.scalarBits));
      return run<Loops, T, FuncSum<T>>(b, identity, identity);
  }
}

template <typename Loops, typename T>
void reduceAs(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
              std::size_t count, bool finalize) {
  reduceTyped<Loops, T>(spec,
                        Buffers<T>{static_cast<T*>(dst), static_cast<const T*>(local),
                                   static_cast<const T*>(remote), count},
                        finalize);
}

// The one dispatch on (type, kind) per call.
template <typename Loops>
void reduceValidated(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                     std::size_t count, bool finalize) {
  switch (spec.type) {
    case DataType::Int8:
      return reduceAs<Loops, std::int8_t>(spec, dst, local, remote, count, finalize);
    case DataType::Uint8:
      return reduceAs<Loops, std::uint8_t>(spec, dst, local, remote, count, finalize);
    case DataType::Int32:
      return reduceAs<Loops, std::int32_t>(spec, dst, local, remote, count, finalize);
    case DataType::Uint32:
      return reduceAs<Loops, std::uint32_t>(spec, dst, local, remote, count, finalize);
    case DataType::Int64:
      return reduceAs<Loops, std::int64_t>(spec, dst, local, remote, count, finalize);
    case DataType::Uint64:
      return reduceAs<Loops, std::uint64_t>(spec, dst, local, remote, count, finalize);
    case DataType::Float16:
      return reduceAs<Loops, float16>(spec, dst, local, remote, count, finalize);
    case DataType::Float32:
      return reduceAs<Loops, float>(spec, dst, local, remote, count, finalize);
    case DataType::Float64:
      return reduceAs<Loops, double>(spec, dst, local, remote, count, finalize);
    case DataType::Bfloat16:
      return reduceAs<Loops, bfloat16>(spec, dst, local, remote, count, finalize);
    case DataType::Float8e4m3:
      return reduceAs<Loops, fp8_e4m3>(spec, dst, local, remote, count, finalize);
    case DataType::Float8e5m2:
      return reduceAs<Loops, fp8_e5m2>(spec, dst, local, remote, count, finalize);
  }
}

}  // namespace hora::kernels::loops
