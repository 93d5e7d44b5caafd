// What the protocol tests share: the two protocols with the host ordering as
// one type list, a FIFO in its own memory, the bytes every message carries,
// and a sender and a receiver that stream a list of messages and report the
// first thing that went wrong. The receiver checks every byte and every
// size: a byte is a function of its message's index and its own position,
// so a byte delivered into the wrong message, at the wrong place, twice or
// not at all shows up.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "protocols/fifo_handle.h"
#include "protocols/host_fifo.h"
#include "protocols/host_ordering.h"
#include "protocols/ll.h"
#include "protocols/simple.h"
#include "protocols/status.h"

namespace hora::protocols::testing {

struct SimpleHost {
  using Sender = SimpleSender<HostOrdering>;
  using Receiver = SimpleReceiver<HostOrdering>;
  // Zero-byte messages that fit in an empty FIFO: one slot each.
  static std::uint64_t emptyMessagesThatFit(const FifoHandle& fifo) { return fifo.slotCount; }
};
struct LLHost {
  using Sender = LLSender<HostOrdering>;
  using Receiver = LLReceiver<HostOrdering>;
  // One header line each.
  static std::uint64_t emptyMessagesThatFit(const FifoHandle& fifo) { return llLines(fifo); }
};
using HostProtocols = ::testing::Types<SimpleHost, LLHost>;

class ProtocolNames {
 public:
  template <class P>
  static std::string GetName(int) {
    return std::is_same_v<P, SimpleHost> ? "Simple" : "LL";
  }
};

// A FIFO in a block of its own (aligned as a mapping would be).
class OwnedFifo {
 public:
  OwnedFifo(std::uint64_t slotBytes, std::uint64_t slotCount)
      : bytes_(fifoLayout(slotBytes, slotCount).totalBytes),
        block_(std::aligned_alloc(4096, roundUpTo(bytes_, 4096))),
        fifo_(initFifo(block_, bytes_, slotBytes, slotCount)) {}
  ~OwnedFifo() { std::free(block_); }
  OwnedFifo(const OwnedFifo&) = delete;
  OwnedFifo& operator=(const OwnedFifo&) = delete;

  const FifoHandle& handle() const { return fifo_; }

 private:
  std::size_t bytes_;
  void* block_;
  FifoHandle fifo_;
};

inline char messageByte(std::uint64_t message, std::uint64_t position) {
  const std::uint64_t mixed = ((message << 32) + position + 1) * 0x9e3779b97f4a7c15ull;
  return static_cast<char>(mixed >> 56);
}
inline std::vector<char> messageBytes(std::uint64_t message, std::size_t bytes) {
  std::vector<char> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = messageByte(message, i);
  return out;
}

// Sizes that probe every edge of both protocols (empty, under and over LL's
// 4-byte words, a slot, a slot and one, many slots), mixed with random ones,
// from a fixed seed so that a failure reproduces.
inline std::vector<std::size_t> messageSizes(std::size_t count, std::size_t slotBytes, std::size_t large) {
  const std::size_t edges[] = {0, 1, 3, 4, 5, 7, slotBytes - 1, slotBytes, slotBytes + 1, 2 * slotBytes, large};
  const std::size_t edgeCount = sizeof(edges) / sizeof(edges[0]);
  std::mt19937 engine(20240607);
  std::vector<std::size_t> sizes(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t draw = engine();
    sizes[i] = i < edgeCount ? edges[i] : draw % 2 ? edges[(draw >> 1) % edgeCount] : (draw >> 1) % (3 * slotBytes);
  }
  return sizes;
}

template <class P>
Status sendAll(const FifoHandle& fifo, const std::vector<std::size_t>& sizes, std::uint64_t deadline) {
  typename P::Sender sender(fifo);
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    const std::vector<char> data = messageBytes(m, sizes[m]);
    const Status status = sender.send(data.data(), data.size(), deadline);
    if (status != Status::Ok) return status;
  }
  return Status::Ok;
}

// "" when every message arrived whole and in order; else what went wrong first.
template <class P>
std::string receiveAll(const FifoHandle& fifo, const std::vector<std::size_t>& sizes, std::uint64_t deadline) {
  typename P::Receiver receiver(fifo);
  std::size_t largest = 0;
  for (std::size_t size : sizes) largest = size > largest ? size : largest;
  std::vector<char> buffer(largest);
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    std::size_t bytes = ~std::size_t{0};
    const Status status = receiver.recv(buffer.data(), buffer.size(), &bytes, deadline);
    if (status != Status::Ok) return strCat("message ", m, ": ", statusName(status));
    if (bytes != sizes[m]) return strCat("message ", m, ": ", bytes, " bytes, expected ", sizes[m]);
    for (std::size_t i = 0; i < bytes; ++i) {
      if (buffer[i] != messageByte(m, i)) return strCat("message ", m, " of ", bytes, " bytes: byte ", i, " differs");
    }
  }
  return "";
}

}  // namespace hora::protocols::testing
