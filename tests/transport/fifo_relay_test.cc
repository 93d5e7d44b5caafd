// The device network path's relays (transport/proxy/fifo_relay.h) and the
// thread that drives them (network_proxy.h), with
// host threads in the kernels' place: they run the same Simple protocol on
// the FIFOs (protocols/simple.h) that a kernel runs there. A sending
// "kernel" fills FIFOs, a relay carries their slots over a TCP connection
// (a socket pair), another relay fills the receiving FIFOs, and a
// receiving "kernel" must see every slot exactly as it was published: its
// bytes, size word (last piece, stamp flag and check) and stamp.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/socket.h"
#include "protocols/host_fifo.h"
#include "protocols/host_ordering.h"
#include "protocols/simple.h"
#include "transport/byte_stream.h"
#include "transport/proxy/fifo_relay.h"
#include "transport/proxy/network_proxy.h"
#include "transport/stream_connection.h"

namespace hora::transport::proxy {
namespace {

using protocols::FifoHandle;
using protocols::HostOrdering;
using protocols::SimplePiece;

constexpr std::uint64_t kSlotBytes = 1024;
constexpr std::uint64_t kSlotCount = 4;

// FIFOs in plain host memory, one per channel (pinned memory the GPU maps
// in the real path).
struct Fifos {
  explicit Fifos(std::size_t channels) {
    const std::size_t bytes = protocols::fifoLayout(kSlotBytes, kSlotCount).totalBytes;
    for (std::size_t c = 0; c < channels; ++c) {
      blocks.push_back(std::unique_ptr<char[], decltype(&std::free)>(
          static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)), &std::free));
      handles.push_back(protocols::initFifo(blocks.back().get(), bytes, kSlotBytes, kSlotCount));
    }
  }
  std::vector<std::unique_ptr<char[], decltype(&std::free)>> blocks;
  std::vector<FifoHandle> handles;
};

// A connected pair of TCP-style connections over a socket pair.
struct ConnectionPair {
  ConnectionPair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw std::runtime_error("socketpair");
    sender = std::make_unique<StreamSendConnection>(std::make_unique<SocketStream>(Socket(fds[0]), "rank 1"),
                                                    "rank 1");
    receiver = std::make_unique<StreamRecvConnection>(std::make_unique<SocketStream>(Socket(fds[1]), "rank 0"),
                                                      "rank 0");
  }
  std::unique_ptr<StreamSendConnection> sender;
  std::unique_ptr<StreamRecvConnection> receiver;
};

// What the sending kernel publishes on channel c, slot k.
struct Slot {
  std::uint64_t bytes;
  bool last;
  bool stamped;
  std::uint64_t check;
};
Slot slotOf(std::size_t channel, std::uint64_t k) {
  // Sizes 0, 1, odd, full; a stamp every fifth slot, sometimes on a
  // piece that does not end its message.
  const std::uint64_t sizes[] = {0, 1, 7, 333, kSlotBytes, kSlotBytes - 16, 64};
  Slot slot{sizes[(k + channel) % 7], (k % 3) != 1, (k % 5) == 0, 0};
  if (slot.stamped) slot.check = (k * 2654435761u + channel) & protocols::kStampCheckMask;
  return slot;
}
char byteOf(std::size_t channel, std::uint64_t k, std::uint64_t i) {
  return static_cast<char>(channel * 31 + k * 7 + i * 13 + 1);
}

// Runs kernels' stand-ins on both ends of `channels` FIFOs relayed by
// `relay`, a function that starts the relaying and returns what stops it.
void checkEverySlotArrives(std::size_t kChannels, const std::function<std::function<void()>(Fifos&, Fifos&)>& relay) {
  constexpr std::uint64_t kSlotsPerChannel = 400;  // the FIFOs wrap a hundred times
  Fifos sending(kChannels), receiving(kChannels);
  const std::function<void()> stopRelaying = relay(sending, receiving);
  const auto deadline = static_cast<std::uint64_t>(HostOrdering::now()) + 30'000'000'000ull;
  std::vector<std::thread> kernels;
  for (std::size_t c = 0; c < kChannels; ++c) {
    kernels.emplace_back([&, c] {
      protocols::SimpleSender<HostOrdering> out(sending.handles[c]);
      for (std::uint64_t k = 0; k < kSlotsPerChannel; ++k) {
        char* slot = nullptr;
        ASSERT_EQ(out.waitRoom(&slot, deadline), protocols::Status::Ok);
        const Slot want = slotOf(c, k);
        for (std::uint64_t i = 0; i < want.bytes; ++i) slot[i] = byteOf(c, k, i);
        if (want.stamped) {
          const std::uint64_t stamp[protocols::kStampWords] = {k, c, 0xabcdef, k * k};
          SimplePiece piece{nullptr, want.bytes, want.last, true, want.check, nullptr};
          out.publishWord(protocols::sizeWordOf(piece), stamp);
        } else {
          out.publish(want.bytes, want.last);
        }
      }
    });
    kernels.emplace_back([&, c] {
      protocols::SimpleReceiver<HostOrdering> in(receiving.handles[c]);
      for (std::uint64_t k = 0; k < kSlotsPerChannel; ++k) {
        SimplePiece piece{};
        ASSERT_EQ(in.waitData(&piece, deadline), protocols::Status::Ok) << "channel " << c << " slot " << k;
        const Slot want = slotOf(c, k);
        ASSERT_EQ(piece.bytes, want.bytes) << "channel " << c << " slot " << k;
        ASSERT_EQ(piece.last, want.last) << "channel " << c << " slot " << k;
        ASSERT_EQ(piece.stamped, want.stamped) << "channel " << c << " slot " << k;
        if (want.stamped) {
          ASSERT_EQ(piece.check, want.check);
          EXPECT_EQ(piece.stamp[0], k);
          EXPECT_EQ(piece.stamp[1], c);
          EXPECT_EQ(piece.stamp[2], 0xabcdefu);
          EXPECT_EQ(piece.stamp[3], k * k);
        }
        for (std::uint64_t i = 0; i < want.bytes; ++i)
          ASSERT_EQ(piece.data[i], byteOf(c, k, i)) << "channel " << c << " slot " << k << " byte " << i;
        in.release();
      }
    });
  }
  for (auto& kernel : kernels) kernel.join();
  stopRelaying();
}

TEST(FifoRelay, EverySlotArrivesAsItWasPublishedOnEveryChannel) {
  ConnectionPair pair;
  std::unique_ptr<FifoSendRelay> sendRelay;
  std::unique_ptr<FifoRecvRelay> recvRelay;
  std::atomic<bool> stop{false};
  std::thread relays;
  checkEverySlotArrives(3, [&](Fifos& sending, Fifos& receiving) {
    sendRelay = std::make_unique<FifoSendRelay>(sending.handles, *pair.sender);
    recvRelay = std::make_unique<FifoRecvRelay>(receiving.handles, *pair.receiver);
    relays = std::thread([&] {
      // One thread drives both relays here; in a job each side has its own.
      while (!stop.load()) {
        const bool moved = sendRelay->progress() | recvRelay->progress();
        if (!moved) std::this_thread::yield();
      }
    });
    return [&] {
      stop = true;
      relays.join();
      EXPECT_TRUE(sendRelay->idle());
    };
  });
}

// The same through two NetworkProxy threads, as two ranks run them.
TEST(NetworkProxy, CarriesEverySlotBetweenTwoRanks) {
  ConnectionPair pair;
  std::unique_ptr<NetworkProxy> sendingRank, receivingRank;
  std::atomic<bool> failed{false};
  checkEverySlotArrives(2, [&](Fifos& sending, Fifos& receiving) {
    auto onFailure = [&](const Error&) { failed = true; };
    sendingRank = std::make_unique<NetworkProxy>(std::make_unique<FifoSendRelay>(sending.handles, *pair.sender),
                                                 nullptr, onFailure);
    receivingRank = std::make_unique<NetworkProxy>(
        nullptr, std::make_unique<FifoRecvRelay>(receiving.handles, *pair.receiver), onFailure);
    return [&] {
      sendingRank->stop();
      receivingRank->stop();
    };
  });
  EXPECT_FALSE(failed.load());
}

// A rank that destroys its communicator finishes its proxy: every slot its
// kernel published goes, then the end of the stream, and the peer's proxy
// ends quietly even as the connection closes: a peer that left in order is
// not a failure. One that vanishes without ending its stream is.
void checkHowAPeerLeaves(bool inOrder) {
  Fifos sending(1), receiving(1);
  auto pair = std::make_unique<ConnectionPair>();
  std::atomic<bool> failed{false};
  std::string reason;
  NetworkProxy receivingRank(nullptr, std::make_unique<FifoRecvRelay>(receiving.handles, *pair->receiver),
                             [&](const Error& error) {
                               reason = error.what();
                               failed = true;
                             });
  auto sendingRank = std::make_unique<NetworkProxy>(
      std::make_unique<FifoSendRelay>(sending.handles, *pair->sender), nullptr, [](const Error&) {});
  constexpr int kSlots = 3;  // fewer than the FIFO holds: the kernel never waits
  protocols::SimpleSender<HostOrdering> out(sending.handles[0]);
  for (int k = 0; k < kSlots; ++k) {
    char* slot = nullptr;
    ASSERT_TRUE(out.tryRoom(&slot));
    slot[0] = static_cast<char>(k + 1);
    out.publish(1);
  }
  if (inOrder) {
    sendingRank->finish(std::chrono::seconds(10));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the slots go, no end follows
    sendingRank->stop();
  }
  sendingRank.reset();
  pair->sender.reset();  // the connection closes
  protocols::SimpleReceiver<HostOrdering> in(receiving.handles[0]);
  const auto deadline = HostOrdering::now() + 10'000'000'000ull;
  for (int k = 0; k < kSlots; ++k) {
    SimplePiece piece{};
    ASSERT_EQ(in.waitData(&piece, deadline), protocols::Status::Ok) << "slot " << k;
    EXPECT_EQ(piece.data[0], static_cast<char>(k + 1));
    in.release();
  }
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(inOrder ? 1 : 10);
  while (!failed && std::chrono::steady_clock::now() < giveUp) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (inOrder) {
    EXPECT_FALSE(failed.load()) << "a peer that ended its stream was taken for a failure: " << reason;
  } else {
    ASSERT_TRUE(failed.load()) << "a peer that vanished without ending its stream went unnoticed";
    EXPECT_NE(reason.find("rank 0"), std::string::npos) << reason;
  }
  receivingRank.stop();
}

TEST(NetworkProxy, APeerThatFinishesEndsTheStreamQuietly) { checkHowAPeerLeaves(true); }
TEST(NetworkProxy, APeerThatVanishesWithoutEndingIsAFailure) { checkHowAPeerLeaves(false); }

// A proxy whose peer is gone stops and says why, naming the peer, so that
// its rank can stop the kernels that wait on it.
TEST(NetworkProxy, APeerThatIsGoneStopsItWithTheReason) {
  Fifos sending(1);
  auto pair = std::make_unique<ConnectionPair>();
  pair->receiver.reset();
  std::atomic<bool> called{false};
  std::string reason;
  NetworkProxy proxy(std::make_unique<FifoSendRelay>(sending.handles, *pair->sender), nullptr,
                     [&](const Error& error) {
                       reason = error.what();
                       called = true;
                     });
  protocols::SimpleSender<HostOrdering> out(sending.handles[0]);
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!called && std::chrono::steady_clock::now() < giveUp) {
    char* slot = nullptr;
    if (out.tryRoom(&slot)) out.publish(kSlotBytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(called.load()) << "the proxy did not notice its peer was gone";
  EXPECT_TRUE(proxy.failed());
  EXPECT_NE(reason.find("rank 1"), std::string::npos) << reason;
  proxy.stop();
}

// A relay at the far end that is gone: the relay that sends to it fails
// with the connection's error, which names the peer, instead of waiting.
TEST(FifoRelay, APeerThatIsGoneIsAnErrorNamingIt) {
  Fifos sending(1);
  auto pair = std::make_unique<ConnectionPair>();
  FifoSendRelay relay(sending.handles, *pair->sender);
  pair->receiver.reset();  // the peer's end closes
  protocols::SimpleSender<HostOrdering> out(sending.handles[0]);
  std::string error;
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  try {
    // Enough slots that the socket's buffer cannot hide the peer's absence.
    for (int k = 0; std::chrono::steady_clock::now() < giveUp; ++k) {
      char* slot = nullptr;
      if (out.tryRoom(&slot)) out.publish(kSlotBytes);
      relay.progress();
    }
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
}

// Bytes that are not a relay's frames (another program on the connection,
// a relay with more channels) are refused before anything is written into
// a FIFO.
TEST(FifoRelay, AFrameThatIsNotARelaysIsRefused) {
  Fifos receiving(2);
  for (const FrameHeader bad : {FrameHeader{16, 2},                        // no such channel
                                FrameHeader{kSlotBytes + 16, 0},           // larger than a slot
                                FrameHeader{std::uint64_t{5} << 32, 1}}) {  // a check without a stamp
    ConnectionPair pair;
    FifoRecvRelay relay(receiving.handles, *pair.receiver);
    pair.sender->post(&bad, sizeof(bad));
    std::string error;
    try {
      for (int i = 0; i < 100000 && error.empty(); ++i) {
        pair.sender->progress();
        relay.progress();
      }
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("none of its own"), std::string::npos) << "channel " << bad.channel << ": " << error;
    EXPECT_NE(error.find("rank 0"), std::string::npos) << error;
    for (const FifoHandle& fifo : receiving.handles) EXPECT_EQ(*fifo.head, 0u) << "a slot was published";
  }
}

}  // namespace
}  // namespace hora::transport::proxy
