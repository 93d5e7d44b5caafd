// A shared-memory sender and receiver connected in one process, over a TCP
// lifeline on loopback: the same handshake and the same memory as between
// two ranks, with both ends driven from the test's thread. Checked: posted
// buffers arrive intact and in order through a FIFO smaller than they are;
// the sender counts bytes as completed only after the receiver has mapped
// the FIFO; the in-place calls see exactly the bytes of their piece and only
// after everything posted before it; alignStream() aligns what follows in
// the ring; idle() reports a sender waiting for room; and a peer's exit is
// reported only once nothing it sent is left to read.
#include "transport/shm/shm_connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/socket.h"
#include "core/progress.h"
#include "byte_pattern.h"
#include "shm_pair.h"
#include "hora/communicator.h"

namespace hora::transport::testing {
namespace {

// Both ways of setting a FIFO up (pages at once, or on first use) carry the
// same bytes.
class ShmConnectionSetupTest : public ShmConnectionTest, public ::testing::WithParamInterface<bool> {};
INSTANTIATE_TEST_SUITE_P(PagesAtSetUp, ShmConnectionSetupTest, ::testing::Bool());

TEST_P(ShmConnectionSetupTest, StreamedBuffersArriveIntactAndInOrder) {
  connectSender(/*busy=*/GetParam());
  acceptReceiver();
  // Odd sizes, some larger than the FIFO, so that pieces wrap the ring and
  // a buffer is split over several copies.
  const std::vector<std::size_t> sizes = {1, 7, 4093, 65537, 3, 200001, 64, 999, kFifoBytes};
  constexpr std::size_t kGuard = 8;
  constexpr char kGuardByte = 0x5a;
  std::vector<std::vector<char>> sent, received;
  std::uint64_t total = 0;
  for (std::size_t size : sizes) {
    sent.push_back(patternBytes(size, total));
    received.emplace_back(size + kGuard, kGuardByte);
    total += size;
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) sender->post(sent[i].data(), sizes[i]);
  for (std::size_t i = 0; i < sizes.size(); ++i) receiver->post(received[i].data(), sizes[i]);
  EXPECT_EQ(sender->postedBytes(), total);
  EXPECT_EQ(receiver->postedBytes(), total);

  ASSERT_TRUE(pumpUntil(
      [&] { return sender->completedBytes() == total && receiver->completedBytes() == total; }));
  std::uint64_t position = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::size_t firstBad = 0;
    EXPECT_EQ(patternMismatches(received[i].data(), sizes[i], position, 0, &firstBad), 0u)
        << "buffer " << i << " (" << sizes[i] << " bytes), first wrong byte " << firstBad;
    for (std::size_t g = 0; g < kGuard; ++g)
      EXPECT_EQ(received[i][sizes[i] + g], kGuardByte) << "buffer " << i << " overrun";
    position += sizes[i];
  }
  EXPECT_TRUE(sender->idle());
  EXPECT_TRUE(receiver->idle());
}

TEST_F(ShmConnectionTest, SenderCompletesOnlyOnceTheReceiverHasMappedTheFifo) {
  connectSender();  // does not wait for the receiver
  std::vector<char> data = patternBytes(100, 0);
  sender->post(data.data(), data.size());
  EXPECT_TRUE(sender->progress()) << "the bytes go into the FIFO at once";
  EXPECT_EQ(sender->postedBytes(), 100u);
  EXPECT_EQ(sender->completedBytes(), 0u) << "no receiver has mapped the FIFO yet";
  EXPECT_FALSE(sender->idle());
  EXPECT_NO_THROW(sender->checkAlive());
  EXPECT_EQ(sender->completedBytes(), 0u);

  acceptReceiver();
  ASSERT_TRUE(pumpUntil([&] { return sender->completedBytes() == 100; }));
  EXPECT_EQ(sender->completedBytes(), sender->postedBytes());
  EXPECT_FALSE(sender->idle()) << "the receiver has not taken the bytes yet";
  EXPECT_EQ(sender->acknowledgedBytes(), 0u);

  std::vector<char> received(100);
  receiver->post(received.data(), received.size());
  ASSERT_TRUE(pumpUntil([&] { return receiver->completedBytes() == 100; }));
  EXPECT_EQ(received, data);
  EXPECT_EQ(sender->acknowledgedBytes(), 100u);
  EXPECT_TRUE(sender->idle());
}

// A sender that needs the receiver's handshake answer (a single-copy
// sender asks whether the receiver may read its memory) is busy until it
// comes, watching the lifeline the answer arrives on; a wait that stalls
// there says so.
TEST_F(ShmConnectionTest, SenderAwaitingTheHandshakeAnswerIsBusyAndSaysSoWhenItStalls) {
  connectSender();  // no receiver yet: no answer
  EXPECT_FALSE(sender->idle()) << "the answer is still due";
  EXPECT_NE(sender->pollEntry().fd, -1) << "the answer comes on the lifeline, which a sleeper must watch";
  EXPECT_EQ(sender->wakeLine(), nullptr) << "nothing rings a wake line for the answer";
  std::atomic<bool> abort{false};
  core::ProgressEngine engine({std::chrono::milliseconds(200), std::chrono::microseconds(0), &abort, 0});
  engine.add(sender.get());
  try {
    engine.waitUntil([&] { return sender->peerMemoryAccess() != PeerMemoryAccess::Unknown; }, "testing");
    ADD_FAILURE() << "the wait ended without an answer";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(kReceiverName + " to answer the connection's handshake"),
              std::string::npos)
        << error.what();
  }
  acceptReceiver();
  ASSERT_TRUE(pumpUntil([&] { return sender->peerMemoryAccess() != PeerMemoryAccess::Unknown; }));
  EXPECT_TRUE(sender->idle()) << "answered, nothing posted";
}

TEST_F(ShmConnectionTest, InPlaceSendAndReceiveMoveDataIntact) {
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  std::span<char> region = sender->writable(1000);
  ASSERT_EQ(region.size(), 1000u);
  EXPECT_EQ(sender->writable(10).size(), 10u) << "writable() gives at most what was asked";
  fillPattern(region.data(), 1000, start);
  sender->commitWritten(1000);
  EXPECT_EQ(sender->postedBytes(), start + 1000);
  EXPECT_EQ(sender->completedBytes(), start + 1000) << "committed bytes are sent at once";

  receiver->postInPlace(1000);
  EXPECT_EQ(receiver->postedBytes(), start + 1000);
  std::span<const char> readable = receiver->readable();
  ASSERT_EQ(readable.size(), 1000u);
  EXPECT_EQ(patternMismatches(readable.data(), 1000, start), 0u);
  receiver->consumeRead(400);
  EXPECT_EQ(receiver->completedBytes(), start + 400);
  readable = receiver->readable();
  ASSERT_EQ(readable.size(), 600u);
  EXPECT_EQ(patternMismatches(readable.data(), 600, start + 400), 0u);
  EXPECT_THROW(receiver->consumeRead(601), Error) << "more than the in-place piece";
  receiver->consumeRead(600);
  EXPECT_EQ(receiver->completedBytes(), start + 1000);
  EXPECT_TRUE(receiver->readable().empty()) << "no in-place receive is posted";
}

TEST_F(ShmConnectionTest, InPlaceReceiveSeesOnlyItsOwnPiece) {
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  std::vector<char> data = patternBytes(300, start);
  sender->post(data.data(), data.size());
  ASSERT_TRUE(pumpUntil([&] { return sender->completedBytes() == start + 300; }));
  // 300 bytes are in the FIFO; the in-place receive asked for 120 of them.
  receiver->postInPlace(120);
  std::span<const char> readable = receiver->readable();
  ASSERT_EQ(readable.size(), 120u);
  EXPECT_EQ(patternMismatches(readable.data(), 120, start), 0u);
  receiver->consumeRead(120);
  std::vector<char> rest(180);
  receiver->post(rest.data(), rest.size());
  ASSERT_TRUE(pumpUntil([&] { return receiver->completedBytes() == start + 300; }));
  EXPECT_EQ(patternMismatches(rest.data(), 180, start + 120), 0u);
}

TEST_F(ShmConnectionTest, ReadableWaitsForEarlierStreamReceives) {
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  std::vector<char> data = patternBytes(30, start);
  sender->post(data.data(), data.size());
  ASSERT_TRUE(pumpUntil([&] { return sender->completedBytes() == start + 30; }));

  char first[10] = {};
  receiver->post(first, sizeof(first));
  receiver->postInPlace(20);
  EXPECT_TRUE(receiver->readable().empty()) << "the stream receive before it is still pending";
  EXPECT_TRUE(receiver->progress());
  EXPECT_EQ(patternMismatches(first, 10, start), 0u);
  std::span<const char> readable = receiver->readable();
  ASSERT_EQ(readable.size(), 20u);
  EXPECT_EQ(patternMismatches(readable.data(), 20, start + 10), 0u);
  receiver->consumeRead(20);
  EXPECT_EQ(receiver->completedBytes(), start + 30);
}

TEST_F(ShmConnectionTest, WritableWaitsForQueuedStreamSends) {
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  const std::size_t bytes = 2 * kFifoBytes + 5;
  std::vector<char> data = patternBytes(bytes, start);
  sender->post(data.data(), bytes);
  EXPECT_TRUE(sender->writable(16).empty()) << "posted bytes go first";
  sender->progress();  // fills the FIFO; the rest stays queued
  EXPECT_LT(sender->completedBytes(), start + bytes);
  EXPECT_TRUE(sender->writable(16).empty()) << "posted bytes go first";

  std::vector<char> received(bytes);
  receiver->post(received.data(), bytes);
  ASSERT_TRUE(pumpUntil([&] { return sender->completedBytes() == start + bytes; }));
  std::span<char> region = sender->writable(16);
  ASSERT_EQ(region.size(), 16u) << "all posted bytes are in the FIFO now";
  fillPattern(region.data(), 16, start + bytes);
  sender->commitWritten(16);

  receiver->postInPlace(16);
  ASSERT_TRUE(pumpUntil([&] { return receiver->readable().size() == 16; }));
  EXPECT_EQ(patternMismatches(received.data(), bytes, start), 0u);
  EXPECT_EQ(patternMismatches(receiver->readable().data(), 16, start + bytes), 0u);
  receiver->consumeRead(16);
  EXPECT_EQ(receiver->completedBytes(), start + bytes + 16);
}

TEST_F(ShmConnectionTest, AlignStreamAlignsTheNextInPlaceRegion) {
  connectAndSettle();
  constexpr std::size_t kAlignment = 64;
  std::uint64_t position = sender->postedBytes();
  // Message sizes that leave the stream at many different offsets; the
  // pair runs through the ring (64 KiB) several times.
  for (std::size_t size : {13, 1, 63, 64, 100, 4095, 40000, 30000, 17}) {
    SCOPED_TRACE(::testing::Message() << "after a message of " << size << " bytes");
    const std::uint64_t messageStart = position;
    std::vector<char> message = patternBytes(size, messageStart, 1);
    constexpr char kGuardByte = 0x33;
    std::vector<char> received(size + kAlignment, kGuardByte);
    sender->post(message.data(), size);
    receiver->post(received.data(), size);
    sender->alignStream(kAlignment);
    receiver->alignStream(kAlignment);
    ASSERT_EQ(sender->postedBytes() % kAlignment, 0u);
    ASSERT_EQ(receiver->postedBytes(), sender->postedBytes()) << "both ends pad alike";
    EXPECT_LT(sender->postedBytes() - (position + size), kAlignment) << "padding under 64 bytes";
    position = sender->postedBytes();
    sender->alignStream(kAlignment);
    EXPECT_EQ(sender->postedBytes(), position) << "an aligned stream needs no padding";

    // The padding is streamed too; then the sender writes in place.
    ASSERT_TRUE(pumpUntil([&] { return !sender->writable(kAlignment).empty(); }));
    std::span<char> region = sender->writable(kAlignment);
    ASSERT_EQ(region.size(), kAlignment);
    EXPECT_TRUE(isAligned(region.data(), kAlignment))
        << "writable() at " << static_cast<void*>(region.data());
    fillPattern(region.data(), kAlignment, position, 2);
    sender->commitWritten(kAlignment);

    receiver->postInPlace(kAlignment);
    ASSERT_TRUE(pumpUntil([&] { return receiver->readable().size() == kAlignment; }));
    std::span<const char> readable = receiver->readable();
    EXPECT_TRUE(isAligned(readable.data(), kAlignment))
        << "readable() at " << static_cast<const void*>(readable.data());
    EXPECT_EQ(patternMismatches(readable.data(), kAlignment, position, 2), 0u);
    receiver->consumeRead(kAlignment);
    position += kAlignment;

    // The message arrived whole, and the padding went nowhere near it.
    EXPECT_EQ(patternMismatches(received.data(), size, messageStart, 1), 0u);
    for (std::size_t g = size; g < received.size(); ++g)
      ASSERT_EQ(received[g], kGuardByte) << "padding written into the receive buffer";
  }
}

TEST_F(ShmConnectionTest, AlignStreamPadsToSmallerAlignmentsAndRejectsLargeOnes) {
  connectAndSettle();  // the stream is at 1 byte
  sender->alignStream(16);
  receiver->alignStream(16);
  EXPECT_EQ(sender->postedBytes(), 16u);
  EXPECT_EQ(receiver->postedBytes(), 16u);
  sender->alignStream(1);
  EXPECT_EQ(sender->postedBytes(), 16u);
  EXPECT_THROW(sender->alignStream(128), Error) << "more than kMaxStreamAlignment";
  EXPECT_THROW(receiver->alignStream(0), Error);
  ASSERT_TRUE(pumpUntil([&] { return receiver->completedBytes() == 16; }));
}

TEST_F(ShmConnectionTest, ReceiverReadsTheSendersMemoryDirectly) {
  connectAndSettle();
  EXPECT_TRUE(receiver->readsPeerMemory()) << "a rank of the same process";
  ASSERT_TRUE(pumpUntil(
      [&] { return sender->peerMemoryAccess() != PeerMemoryAccess::Unknown; }));
  EXPECT_EQ(sender->peerMemoryAccess(), PeerMemoryAccess::Yes);
  std::vector<char> data = patternBytes(5000, 3);
  std::vector<char> copy(5000);
  receiver->readPeerMemory(copy.data(), reinterpret_cast<std::uint64_t>(data.data()), data.size());
  EXPECT_EQ(copy, data);
}

TEST_F(ShmConnectionTest, SenderIsBusyWhileWaitingForRoom) {
  connectAndSettle();
  EXPECT_TRUE(sender->idle());
  // In place, the room is one free slot at a time.
  const ShmGeometry geometry = shmGeometry(kFifoBytes, ShmOptions{}.sliceBytes);
  const std::size_t slot = geometry.slotBytes;
  std::span<char> region = sender->writable(slot);
  ASSERT_EQ(region.size(), slot) << "a free slot is room for a slot's bytes";
  EXPECT_TRUE(sender->idle()) << "it got all the room it asked for";
  sender->commitWritten(slot);
  EXPECT_EQ(sender->completedBytes(), sender->postedBytes()) << "committed bytes are sent";
  EXPECT_FALSE(sender->idle()) << "but not yet taken by the receiver";
  for (std::size_t i = 1; i < geometry.slotCount; ++i) {
    ASSERT_EQ(sender->writable(slot).size(), slot) << "slot " << i;
    sender->commitWritten(slot);
  }

  EXPECT_TRUE(sender->writable(1).empty()) << "the FIFO is full";
  EXPECT_FALSE(sender->idle()) << "waiting for room";
  EXPECT_NE(sender->pollEntry().fd, -1) << "a busy sender watches its lifeline";

  const std::size_t inFifo = geometry.slotCount * slot;
  receiver->postInPlace(inFifo);
  ASSERT_EQ(receiver->readable().size(), slot) << "the oldest slot";
  receiver->consumeRead(100);
  EXPECT_TRUE(sender->writable(1).empty()) << "a slot is free only once read to its end";
  receiver->consumeRead(slot - 100);
  EXPECT_EQ(sender->writable(2 * slot).size(), slot) << "only the room there is";
  sender->commitWritten(60);
  for (std::size_t left = inFifo - slot; left > 0; left -= slot) {
    ASSERT_EQ(receiver->readable().size(), slot);
    receiver->consumeRead(slot);
  }
  receiver->postInPlace(60);
  ASSERT_EQ(receiver->readable().size(), 60u);
  receiver->consumeRead(60);
  EXPECT_TRUE(sender->idle()) << "everything taken, no room wanted";

  EXPECT_EQ(sender->writable(slot + 1).size(), slot);
  EXPECT_FALSE(sender->idle()) << "short of the room it asked for";
  sender->commitWritten(0);
  EXPECT_TRUE(sender->idle()) << "a commit ends the wait";
  EXPECT_EQ(sender->writable(40).size(), 40u);
  EXPECT_TRUE(sender->idle());
  EXPECT_EQ(sender->pollEntry().fd, -1) << "an idle sender has nothing to watch";
}

TEST_F(ShmConnectionTest, ReceiverReadsWhatIsLeftAfterTheSenderExits) {
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  std::vector<char> data = patternBytes(100, start);
  sender->post(data.data(), data.size());
  ASSERT_TRUE(pumpUntil([&] { return sender->completedBytes() == start + 100; }));
  EXPECT_NO_THROW(receiver->checkAlive());

  sender.reset();  // closes the lifeline; the FIFO still holds 100 bytes
  std::vector<char> received(100);
  for (int check = 0; check < 20; ++check)
    ASSERT_NO_THROW(receiver->checkAlive()) << "bytes are left to read";
  receiver->post(received.data(), 60);
  EXPECT_TRUE(receiver->progress());
  EXPECT_NO_THROW(receiver->checkAlive()) << "40 bytes are left to read";
  receiver->post(received.data() + 60, 40);
  EXPECT_TRUE(receiver->progress());
  EXPECT_EQ(received, data);
  EXPECT_EQ(receiver->completedBytes(), start + 100);

  Error error = errorSoon([&] { receiver->checkAlive(); });
  EXPECT_EQ(error.kind(), ErrorKind::Remote) << error.what();
  EXPECT_NE(std::string(error.what()).find(kSenderName), std::string::npos) << error.what();
}

TEST_F(ShmConnectionTest, ReceiverWithAnEmptyFifoAndALiveSenderIsAlive) {
  connectAndSettle();
  for (int check = 0; check < 20; ++check) {
    ASSERT_NO_THROW(receiver->checkAlive());
    ASSERT_NO_THROW(sender->checkAlive());
  }
}

TEST_F(ShmConnectionTest, SenderNoticesTheReceiverExitsWithBytesUnread) {
  connectAndSettle();
  EXPECT_NO_THROW(sender->checkAlive());
  std::vector<char> data = patternBytes(100, 7);
  sender->post(data.data(), data.size());
  EXPECT_TRUE(sender->progress());
  receiver.reset();
  Error error = errorSoon([&] { sender->checkAlive(); });
  EXPECT_EQ(error.kind(), ErrorKind::Remote) << error.what();
  EXPECT_NE(std::string(error.what()).find(kReceiverName), std::string::npos) << error.what();
}

TEST_F(ShmConnectionTest, ReceiverThatTookEverythingMayLeave) {
  connectAndSettle();  // the receiver has read all that was sent
  receiver.reset();
  for (int check = 0; check < 20; ++check) ASSERT_NO_THROW(sender->checkAlive());
}

// ---- LL and Simple: both ends name each message's protocol (beginMessage);
// here messages of at most kShmLLMaxBytes take LL (protocolFor, shm_pair.h).

// Names a message of `bytes` to both ends.
void beginBoth(ShmSendConnection& sender, ShmRecvConnection& receiver, std::size_t bytes) {
  sender.beginMessage(protocolFor(bytes), nullptr);
  receiver.beginMessage(protocolFor(bytes), nullptr);
}

TEST_F(ShmConnectionTest, SmallMessagesGoByLLWhileTheSimpleFifoIsFull) {
  connectAndSettle();
  const ShmGeometry geometry = shmGeometry(kFifoBytes, ShmOptions{}.sliceBytes);
  const std::uint64_t start = sender->postedBytes();
  // A large message fills every Simple slot; nobody reads it yet.
  const std::size_t large = geometry.slotCount * geometry.slotBytes;
  const std::vector<std::size_t> sizes = {large, 8, kShmLLMaxBytes, kShmLLMaxBytes + 1};
  std::vector<std::vector<char>> sent, received;
  std::uint64_t position = start;
  for (std::size_t size : sizes) {
    sent.push_back(patternBytes(size, position));
    received.emplace_back(size);
    sender->beginMessage(protocolFor(size), nullptr);
    sender->post(sent.back().data(), size);
    position += size;
  }
  sender->progress();
  EXPECT_EQ(sender->completedBytes(), start + large + 8 + kShmLLMaxBytes)
      << "the small messages passed the full Simple FIFO; the large one after them waits";

  // The receiver takes them in stream order, each from its own FIFO.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    receiver->beginMessage(protocolFor(sizes[i]), nullptr);
    receiver->post(received[i].data(), sizes[i]);
  }
  ASSERT_TRUE(pumpUntil([&] { return receiver->completedBytes() == position; }));
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(received[i], sent[i]) << "message " << i;
  EXPECT_TRUE(pumpUntil([&] { return sender->idle(); }));
}

TEST_F(ShmConnectionTest, MixedSizesArriveInOrderByCopyAndInPlace) {
  connectAndSettle();
  // Sizes on both sides of the LL limit; a small message may still carry
  // more than the limit in all (an all-gather sends several blocks), which
  // LL then cuts into several messages.
  struct Message {
    std::size_t named;  // what beginMessage says
    std::vector<std::size_t> pieces;
  };
  const std::vector<Message> messages = {
      {8, {8}},          {100000, {100000}},   {3, {3}},
      {kShmLLMaxBytes, {kShmLLMaxBytes}},     {kShmLLMaxBytes + 1, {kShmLLMaxBytes + 1}},
      {1000, {1000, 1000, 9000}},             {70000, {30000, 40000}},
      {64, {64}},        {1, {1}},             {12, {12}}};
  std::uint64_t position = sender->postedBytes();
  std::vector<std::vector<char>> sent;
  std::vector<std::uint64_t> starts;
  for (const Message& message : messages) {
    sender->beginMessage(protocolFor(message.named), nullptr);
    for (std::size_t piece : message.pieces) {
      starts.push_back(position);
      sent.push_back(patternBytes(piece, position, 5));
      sender->post(sent.back().data(), piece);
      position += piece;
    }
    sender->alignStream(kMaxStreamAlignment);
    position = sender->postedBytes();
  }

  // Odd pieces by copy, even ones in place, read in bites of 777 bytes.
  std::size_t index = 0;
  for (const Message& message : messages) {
    receiver->beginMessage(protocolFor(message.named), nullptr);
    for (std::size_t piece : message.pieces) {
      SCOPED_TRACE(::testing::Message() << "piece " << index << " of " << piece << " bytes");
      if (index % 2 == 1) {
        std::vector<char> received(piece);
        receiver->post(received.data(), piece);
        ASSERT_TRUE(pumpUntil([&] { return receiver->completedBytes() == starts[index] + piece; }));
        EXPECT_EQ(received, sent[index]);
      } else {
        receiver->postInPlace(piece);
        for (std::size_t done = 0; done < piece;) {
          ASSERT_TRUE(pumpUntil([&] { return !receiver->readable().empty(); }));
          std::span<const char> there = receiver->readable();
          const std::size_t n = std::min<std::size_t>({there.size(), 777, piece - done});
          ASSERT_EQ(patternMismatches(there.data(), n, starts[index] + done, 5), 0u) << "at " << done;
          receiver->consumeRead(n);
          done += n;
        }
      }
      ++index;
    }
    receiver->alignStream(kMaxStreamAlignment);
  }
  EXPECT_TRUE(pumpUntil([&] { return receiver->completedBytes() == sender->postedBytes(); }));
  EXPECT_TRUE(pumpUntil([&] { return sender->idle(); }));
}

TEST_F(ShmConnectionTest, SmallMessagesInPlaceAreAlignedAndIntact) {
  connectAndSettle();
  for (std::size_t size : {std::size_t{8}, std::size_t{100}, kShmLLMaxBytes}) {
    SCOPED_TRACE(::testing::Message() << size << " bytes");
    beginBoth(*sender, *receiver, size);
    sender->alignStream(kMaxStreamAlignment);
    receiver->alignStream(kMaxStreamAlignment);
    const std::uint64_t start = sender->postedBytes();
    ASSERT_TRUE(pumpUntil([&] { return !sender->writable(size).empty(); }));
    std::span<char> region = sender->writable(size + 1000);
    ASSERT_EQ(region.size(), std::min(size + 1000, kShmLLMaxBytes)) << "LL room: up to its limit";
    EXPECT_TRUE(isAligned(region.data(), kMaxStreamAlignment));
    fillPattern(region.data(), size, start, 9);
    sender->commitWritten(size);
    EXPECT_EQ(sender->completedBytes(), start + size);

    receiver->postInPlace(size);
    ASSERT_TRUE(pumpUntil([&] { return receiver->readable().size() == size; }));
    std::span<const char> readable = receiver->readable();
    EXPECT_TRUE(isAligned(readable.data(), kMaxStreamAlignment));
    EXPECT_EQ(patternMismatches(readable.data(), size, start, 9), 0u);
    receiver->consumeRead(size / 2);
    EXPECT_EQ(patternMismatches(receiver->readable().data(), size - size / 2, start + size / 2, 9), 0u);
    receiver->consumeRead(size - size / 2);
    EXPECT_EQ(receiver->completedBytes(), start + size);
    EXPECT_TRUE(pumpUntil([&] { return sender->acknowledgedBytes() == start + size; }));
  }
}

}  // namespace
}  // namespace hora::transport::testing
