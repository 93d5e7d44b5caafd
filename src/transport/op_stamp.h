// What an operation says about itself on each connection it uses: the
// sender's stamp travels with the first bytes of the operation on that
// connection (or alone, when it sends none there), and the receiving
// connection compares it with its own stamp before it hands out a single
// byte of the operation. Ranks that disagree on an operation (its size,
// type, reduction, root, kind, or which call it is) are stopped before
// either uses the other's data: core/agreement.h fills stamps and words
// the error; a transport only carries and compares them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/error.h"

namespace hora::transport {

// Four words: an entry of a shared-memory FIFO's stamps board (protocols/
// simple.h), and the body of a TCP frame. The first kAgreedStampWords must
// be equal at both ends; the others say who sent it, for the message.
inline constexpr std::size_t kOpStampWords = 4;
inline constexpr std::size_t kAgreedStampWords = 3;

struct OpStamp {
  std::array<std::uint64_t, kOpStampWords> words{};
  // 30 bits that differ, but for one chance in 2^30, between stamps whose
  // agreed words differ: what a shared-memory slot carries in its size
  // word (protocols/simple.h). Made once per operation by seal().
  std::uint64_t check = 0;

  OpStamp& seal() {
    // A multiply-xor mix. The two products are independent, so the chain a
    // stamp waits for before its operation's first slot can leave is two
    // multiplications long; the last fold brings the high bits, where
    // the products differ most, down into the 30 kept.
    static_assert(kAgreedStampWords == 3, "seal() mixes three words");
    std::uint64_t h = words[0] ^ words[1] * 0x9e3779b97f4a7c15ull ^ words[2] * 0xc2b2ae3d27d4eb4full;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 33;
    check = h & ((std::uint64_t{1} << 30) - 1);
    return *this;
  }
};

// A stamp a sending connection still has to send, in stream order: the
// operation's bytes start at stream position `from`; `alone` when it went
// out with no bytes of its operation to carry it.
struct OutgoingStamp {
  OpStamp stamp;
  std::uint64_t from;
  bool alone;
};

inline bool stampsAgree(const OpStamp& mine, const OpStamp& theirs) {
  for (std::size_t w = 0; w < kAgreedStampWords; ++w)
    if (mine.words[w] != theirs.words[w]) return false;
  return true;
}

// Thrown by a receiving connection that found the peer's operation is not
// the one this rank runs: `expected` is this rank's stamp (none: this rank
// expected more bytes of an operation already checked), `arrived` the
// peer's (none: bytes came without one). The executor catches it and
// words the error (core/agreement.h); uncaught, it is still InvalidUsage.
class StampMismatch : public Error {
 public:
  StampMismatch(const std::string& peer, std::optional<OpStamp> expected, std::optional<OpStamp> arrived)
      : Error(ErrorKind::InvalidUsage,
              strCat(peer, " sent data of another operation than the one this rank runs")),
        peer_(peer),
        expected_(expected),
        arrived_(arrived) {}
  const std::string& peer() const { return peer_; }
  const std::optional<OpStamp>& expected() const { return expected_; }
  const std::optional<OpStamp>& arrived() const { return arrived_; }

 private:
  std::string peer_;
  std::optional<OpStamp> expected_;
  std::optional<OpStamp> arrived_;
};

}  // namespace hora::transport
