// reduceHost's and reduceHostMany's loops compiled for AVX2 + F16C (x86-64
// CPUs since 2013), taken at run time where the CPU has them (see
// reduce_isa.h for why per-function target attributes instead of a compiler
// flag).
//
// Every type runs the same vectorized loops as the baseline, eight 32-bit
// lanes wide. float16 alone takes a different route: its bit-twiddling
// conversions cost more than the arithmetic, and F16C converts eight halves
// in one instruction, so float16 buffers are converted block by block into
// small float arrays, reduced there by the usual loop on floats, and
// converted back. The results are bit-identical to the baseline: F16C rounds
// to nearest even, overflows to infinity and quiets NaNs exactly as
// dtypes.h does.
#include "kernels/reduce_isa.h"

#if HORA_KERNELS_HAVE_AVX2_LOOPS

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/reduce_loops.h"

#define HORA_TARGET_AVX2 [[gnu::target("avx2,f16c")]]

namespace hora::kernels::detail {
namespace {

// 256 floats per operand: the two blocks (2 KiB) stay in L1, and the three
// streams of a large reduction take turns often enough to keep DRAM busy
// (larger blocks measured slower on 64 MiB buffers).
constexpr std::size_t kHalfBlock = 256;

HORA_TARGET_AVX2 inline void halvesToFloats(float* out, const float16* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(halves));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

HORA_TARGET_AVX2 inline void floatsToHalves(float16* out, const float* in, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i halves =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), halves);
  }
  for (; i < n; ++i) out[i] = float16(in[i]);
}

// Block by block; each block is read completely before any of it is written,
// so dst may equal local or remote.
template <typename Combine, typename Pre, typename Post>
HORA_TARGET_AVX2 void combineHalves(const loops::Buffers<float16>& b, Pre pre, Post post) {
  alignas(32) float x[kHalfBlock];
  alignas(32) float y[kHalfBlock];
  for (std::size_t start = 0; start < b.count; start += kHalfBlock) {
    const std::size_t n = std::min(kHalfBlock, b.count - start);
    halvesToFloats(x, b.local + start, n);
    halvesToFloats(y, b.remote + start, n);
    for (std::size_t i = 0; i < n; ++i) x[i] = post.apply(Combine::apply(pre.apply(x[i]), y[i]));
    floatsToHalves(b.dst + start, x, n);
  }
}

template <typename Pre, typename Post>
HORA_TARGET_AVX2 void transformHalves(const loops::Buffers<float16>& b, Pre pre, Post post) {
  alignas(32) float x[kHalfBlock];
  for (std::size_t start = 0; start < b.count; start += kHalfBlock) {
    const std::size_t n = std::min(kHalfBlock, b.count - start);
    halvesToFloats(x, b.local + start, n);
    for (std::size_t i = 0; i < n; ++i) x[i] = post.apply(pre.apply(x[i]));
    floatsToHalves(b.dst + start, x, n);
  }
}

// Non-temporal stores of 32 bytes (the widest AVX2 has), from a source of
// any alignment; ordinary stores up to dst's first 32-byte boundary and for
// the tail, where a streaming store would need an aligned 32 bytes.
HORA_TARGET_AVX2 inline void streamAvx2(void* dst, const void* src, std::size_t bytes) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const std::size_t head = std::min(bytes, (32 - reinterpret_cast<std::uintptr_t>(out) % 32) % 32);
  if (head != 0) std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  const std::size_t body = bytes / 32 * 32;
#pragma GCC unroll 4
  for (std::size_t i = 0; i < body; i += 32) {
    const __m256i value = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), value);
  }
  if (body != bytes) std::memcpy(out + body, in + body, bytes - body);
}

// An ordinary copy of a block that sits in L1: 32 bytes at a time, inline
// (a call to memcpy, or the string instructions a compiler may inline for
// it, costs more than copying a block of a few hundred bytes).
HORA_TARGET_AVX2 inline void copyAvx2(void* dst, const void* src, std::size_t bytes) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const std::size_t body = bytes / 32 * 32;
#pragma GCC unroll 4
  for (std::size_t i = 0; i < body; i += 32) {
    const __m256i value = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), value);
  }
  if (body != bytes) std::memcpy(out + body, in + body, bytes - body);
}

// noinline (combine, transform): reduceHost and reduceHostMany's blocks share
// one copy of each loop; inlined, every loop would be compiled once more for
// each block loop that calls it, and a call per block costs nothing
// measurable.
struct Avx2Loops {
  template <typename T, typename Combine, typename Pre, typename Post>
  [[gnu::noinline]] HORA_TARGET_AVX2 static void combine(const loops::Buffers<T>& b, Pre pre,
                                                         Post post) {
    if constexpr (std::is_same_v<T, float16>) {
      combineHalves<Combine>(b, pre, post);
    } else {
      loops::combineLoop<T, Combine>(b, pre, post);
    }
  }
  template <typename T, typename Pre, typename Post>
  [[gnu::noinline]] HORA_TARGET_AVX2 static void transform(const loops::Buffers<T>& b, Pre pre,
                                                           Post post) {
    if constexpr (std::is_same_v<T, float16>) {
      transformHalves(b, pre, post);
    } else {
      loops::transformLoop<T>(b, pre, post);
    }
  }
  // flatten: the block loop inlines the copies it calls, AVX2 functions too
  // (always_inline cannot carry them through the generic manyBlocks): at a
  // few hundred bytes per block, calls to them would cost a few percent.
  template <typename T, typename Combine, typename Pre, typename Post>
  [[gnu::flatten]] HORA_TARGET_AVX2 static void many(const ManyBuffers& m, Pre pre, Post post) {
    loops::manyBlocks<Avx2Loops, T, Combine>(m, pre, post);
  }
  HORA_TARGET_AVX2 static void stream(void* dst, const void* src, std::size_t bytes) {
    streamAvx2(dst, src, bytes);
  }
  HORA_TARGET_AVX2 static void copy(void* dst, const void* src, std::size_t bytes) {
    copyAvx2(dst, src, bytes);
  }
};

}  // namespace

void reduceAvx2(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                std::size_t count, bool finalize) {
  loops::reduceValidated<Avx2Loops>(spec, dst, local, remote, count, finalize);
}

void reduceManyAvx2(const ReduceSpec& spec, const ManyBuffers& buffers) {
  loops::reduceManyValidated<Avx2Loops>(spec, buffers);
}

}  // namespace hora::kernels::detail

#endif  // HORA_KERNELS_HAVE_AVX2_LOOPS
