#include "kernels/copy_host.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2: part of every x86-64 CPU
#endif

namespace hora::kernels {

#if defined(__x86_64__)

void copyStreaming(void* dst, const void* src, std::size_t bytes) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  // Ordinary stores up to the first 16-byte boundary of dst, and for the
  // tail: a streaming store must write an aligned 16 bytes.
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(out) % 16) % 16);
  std::memcpy(out, in, head);
  out += head;
  in += head;
  bytes -= head;
  const std::size_t body = bytes / 64 * 64;
  for (std::size_t i = 0; i < body; i += 64) {
    // Four stores fill one 64-byte line, which then leaves as one write.
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  std::memcpy(out + body, in + body, bytes - body);
}

void streamingFence() { _mm_sfence(); }

#else

void copyStreaming(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void streamingFence() {}

#endif

void copyToPublish(void* dst, const void* src, std::size_t bytes, bool streaming) {
  if (!streaming) {
    std::memcpy(dst, src, bytes);
    return;
  }
  copyStreaming(dst, src, bytes);
  streamingFence();
}

}  // namespace hora::kernels
