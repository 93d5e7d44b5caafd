// The loops behind reduceHost and reduceHostMany, written once and compiled
// once per instruction set (reduce_host_baseline.cc, reduce_host_avx2.cc).
// Callers have validated the arguments (reduce_host.cc, reduce_many.cc).
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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_isa.h"
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

// Calls f(std::type_identity<T>{}) with T the element type of `type`: the
// one dispatch on the type per call. The type is valid (callers checked).
template <typename F>
void visitElementType(DataType type, F&& f) {
  switch (type) {
    case DataType::Int8: return f(std::type_identity<std::int8_t>{});
    case DataType::Uint8: return f(std::type_identity<std::uint8_t>{});
    case DataType::Int32: return f(std::type_identity<std::int32_t>{});
    case DataType::Uint32: return f(std::type_identity<std::uint32_t>{});
    case DataType::Int64: return f(std::type_identity<std::int64_t>{});
    case DataType::Uint64: return f(std::type_identity<std::uint64_t>{});
    case DataType::Float16: return f(std::type_identity<float16>{});
    case DataType::Float32: return f(std::type_identity<float>{});
    case DataType::Float64: return f(std::type_identity<double>{});
    case DataType::Bfloat16: return f(std::type_identity<bfloat16>{});
    case DataType::Float8e4m3: return f(std::type_identity<fp8_e4m3>{});
    case DataType::Float8e5m2: return f(std::type_identity<fp8_e5m2>{});
  }
}

// Calls f(std::type_identity<Combine>{}, pre, post) with the functors of
// spec.kind on T: the one dispatch on the kind per call. `post` is
// SumPostDiv's division (the identity for every other kind); the caller
// applies it only to the step that completes the reduction.
template <typename T, typename F>
void visitReduceKind(const ReduceSpec& spec, F&& f) {
  const FuncIdentity<T> identity;
  switch (spec.kind) {
    case ReduceKind::Sum: return f(std::type_identity<FuncSum<T>>{}, identity, identity);
    case ReduceKind::Prod: return f(std::type_identity<FuncProd<T>>{}, identity, identity);
    case ReduceKind::Max: return f(std::type_identity<FuncMax<T>>{}, identity, identity);
    case ReduceKind::Min: return f(std::type_identity<FuncMin<T>>{}, identity, identity);
    case ReduceKind::PreMulSum:
      return f(std::type_identity<FuncSum<T>>{}, FuncPreMul<T>(scalarFromBits<T>(spec.scalarBits)),
               identity);
    case ReduceKind::SumPostDiv:
      return f(std::type_identity<FuncSum<T>>{}, identity, FuncPostDiv<T>(spec.scalarBits));
  }
}

// reduceHost's loops, after validation.
template <typename Loops>
void reduceValidated(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                     std::size_t count, bool finalize) {
  visitElementType(spec.type, [&]<typename T>(std::type_identity<T>) {
    const Buffers<T> b{static_cast<T*>(dst), static_cast<const T*>(local),
                       static_cast<const T*>(remote), count};
    visitReduceKind<T>(spec,
                       [&]<typename Combine>(std::type_identity<Combine>, auto pre, auto post) {
                         if (finalize) {
                           run<Loops, T, Combine>(b, pre, post);
                         } else {
                           run<Loops, T, Combine>(b, pre, FuncIdentity<T>{});
                         }
                       });
  });
}

// ---- reduceHostMany: every input reduced once, the result written to every output ----
//
// Instruction sets add three members to their Loops type for it:
//   Loops::many<T, Combine>(buffers, pre, post)  runs manyBlocks below, compiled
//                                                for the instruction set
//   Loops::stream(dst, src, bytes)               copies with non-temporal stores
//   Loops::copy(dst, src, bytes)                 copies with ordinary stores
//
// The result of one block lands in a scratch block on the stack, still in
// L1, and is then copied to each output. Fusing the reduction with the
// output stores in one loop would need a loop per store kind and output
// count; the scratch lets every (type, kind) reuse the loops above, and a
// block small enough (reduce_many.cc says how small) keeps the input loads
// and the output stores interleaved finely enough to keep memory busy.
//
// The block boundaries fall on 64-byte lines of outputs[0], so that
// streaming stores to it (and to every output with the same alignment) fill
// whole lines; an output aligned differently gets one partially written
// line at each block boundary.

// The first input's block with its pre-step, and with the post-step when
// it is the only input, into the scratch. (Each loop instantiation has one
// call site, here or in combineStep, which keeps the block loop small.)
template <typename Loops, typename T, typename Pre, typename Post>
[[gnu::always_inline]] inline void firstStep(T* scratch, const T* local, std::size_t n, Pre pre,
                                             Post post, bool only) {
  const Buffers<T> b{scratch, local, nullptr, n};
  if constexpr (kIsIdentity<Post>) {
    Loops::template transform<T>(b, pre, post);
  } else if (only) {
    Loops::template transform<T>(b, pre, post);
  } else if constexpr (!kIsIdentity<Pre>) {
    Loops::template transform<T>(b, pre, FuncIdentity<T>{});
  }
}

// Adds one input's block to the reduction so far (remote); the step that
// completes the reduction applies post.
template <typename Loops, typename T, typename Combine, typename Pre, typename Post>
[[gnu::always_inline]] inline void combineStep(T* scratch, const T* local, const T* remote,
                                               std::size_t n, Pre pre, Post post, bool last) {
  const Buffers<T> b{scratch, local, remote, n};
  if constexpr (kIsIdentity<Post>) {
    Loops::template combine<T, Combine>(b, pre, post);
  } else if (last) {
    Loops::template combine<T, Combine>(b, pre, post);
  } else {
    Loops::template combine<T, Combine>(b, pre, FuncIdentity<T>{});
  }
}

// always_inline: Loops::many gets its own copy, compiled for its instruction set.
template <typename Loops, typename T, typename Combine, typename Pre, typename Post>
[[gnu::always_inline]] inline void manyBlocks(const detail::ManyBuffers& m, Pre pre, Post post) {
  alignas(64) T scratch[detail::kMaxManyBlockBytes / sizeof(T)];
  const std::size_t blockCount = m.blockBytes / sizeof(T);
  const auto firstAddress = reinterpret_cast<std::uintptr_t>(m.outputs[0]);
  std::size_t n = blockCount - (firstAddress % 64) / sizeof(T);  // ends on a line of outputs[0]
  for (std::size_t start = 0; start < m.count; start += n, n = blockCount) {
    n = std::min(n, m.count - start);
    // Every input's block is read before any output's block is written, so
    // an output may be one of the inputs.
    const T* first = static_cast<const T*>(m.inputs[0]) + start;
    // The reduction so far: the first input as it is, unless it needs a
    // pre-step (or, being the only input, a post-step).
    const T* sum = first;
    if (!kIsIdentity<Pre> || (m.numInputs == 1 && !kIsIdentity<Post>)) {
      firstStep<Loops>(scratch, first, n, pre, post, m.numInputs == 1);
      sum = scratch;
    }
    for (int k = 1; k < m.numInputs; ++k) {
      combineStep<Loops, T, Combine>(scratch, static_cast<const T*>(m.inputs[k]) + start, sum, n,
                                     pre, post, k == m.numInputs - 1);
      sum = scratch;
    }
    const std::size_t bytes = n * sizeof(T);
    for (int j = 0; j < m.numOutputs; ++j) {
      T* out = static_cast<T*>(m.outputs[j]) + start;
      if (out == sum) continue;  // in place, nothing computed: already there
      if (m.streaming) {
        Loops::stream(out, sum, bytes);
      } else {
        Loops::copy(out, sum, bytes);
      }
    }
  }
}

// reduceHostMany's loops, after validation.
template <typename Loops>
void reduceManyValidated(const ReduceSpec& spec, const detail::ManyBuffers& m) {
  visitElementType(spec.type, [&]<typename T>(std::type_identity<T>) {
    visitReduceKind<T>(spec,
                       [&]<typename Combine>(std::type_identity<Combine>, auto pre, auto post) {
                         Loops::template many<T, Combine>(m, pre, post);
                       });
  });
}

}  // namespace hora::kernels::loops
