// The bytes the transport tests send: a function of the byte's position in
// the stream, so that a receiver can check any piece on its own, and a byte
// delivered at the wrong position, twice or not at all shows up as a
// mismatch. A multiplicative hash rather than a counter: a counter repeats
// every 256 bytes and would hide a piece shifted by a multiple of that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace hora::transport::testing {

inline char patternByte(std::uint64_t position, std::uint64_t seed = 0) {
  const std::uint64_t mixed = (position + 1 + (seed << 40)) * 0x9e3779b97f4a7c15ull;
  return static_cast<char>(mixed >> 56);
}

// `bytes` pattern bytes starting at stream position `first`.
inline void fillPattern(char* out, std::size_t bytes, std::uint64_t first, std::uint64_t seed = 0) {
  for (std::size_t i = 0; i < bytes; ++i) out[i] = patternByte(first + i, seed);
}
inline std::vector<char> patternBytes(std::size_t bytes, std::uint64_t first,
                                      std::uint64_t seed = 0) {
  std::vector<char> out(bytes);
  fillPattern(out.data(), bytes, first, seed);
  return out;
}

// Bytes of `data` that differ from the pattern; the first one in `*firstBad`.
inline std::size_t patternMismatches(const char* data, std::size_t bytes, std::uint64_t first,
                                     std::uint64_t seed = 0, std::size_t* firstBad = nullptr) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (data[i] == patternByte(first + i, seed)) continue;
    if (bad++ == 0 && firstBad != nullptr) *firstBad = i;
  }
  return bad;
}

// Sizes drawn from a fixed seed: the same sequence on every run, so a
// failure can be reproduced. (std::mt19937's output is fixed by the
// standard; the distribution adaptors' is not, hence the modulo.)
class SizeSequence {
 public:
  explicit SizeSequence(std::uint32_t seed) : engine_(seed) {}
  // A size in [low, high].
  std::size_t next(std::size_t low, std::size_t high) {
    return low + static_cast<std::size_t>(engine_() % (high - low + 1));
  }

 private:
  std::mt19937 engine_;
};

}  // namespace hora::transport::testing
