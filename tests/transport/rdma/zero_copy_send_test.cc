// Zero-copy sends of the RDMA credit protocol (rdma/credit_stream.h) over
// the fake device: bytes in a buffer the program registered go to the
// receiver's slot straight from that buffer, which is registered with the
// queue pair once; its bytes do not count as sent until their write has
// completed; a buffer the program deregistered is copied again and its
// registration released. Protocol coverage only (no NIC).
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "stream_pair.h"
#include "transport/stream_connection.h"

namespace hora::transport::rdma {
namespace {

using testing::FakeOptions;
using testing::StreamPair;
using testing::connectPair;
using Clock = std::chrono::steady_clock;

constexpr CreditGeometry kGeometry{4, 16 * 1024};

std::vector<char> pattern(std::size_t bytes, int seed) {
  std::vector<char> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(i * 131 + seed);
  return data;
}

// Sends data and receives it on this thread, taking turns (the fake
// device moves requests as either end polls); what arrived.
std::vector<char> sendAndReceive(StreamPair& pair, const char* data, std::size_t bytes) {
  std::vector<char> got(bytes);
  std::size_t sent = 0, received = 0;
  const auto giveUp = Clock::now() + std::chrono::seconds(20);
  while (received < bytes && Clock::now() < giveUp) {
    if (sent < bytes) sent += pair.sender->trySend(data + sent, bytes - sent);
    received += pair.receiver->tryRecv(got.data() + received, bytes - received);
  }
  EXPECT_EQ(received, bytes) << "the stream stalled";
  return got;
}

TEST(ZeroCopySend, ARegisteredBufferGoesWithoutACopyAndIsRegisteredOnce) {
  auto registrations = std::make_shared<UserRegistrations>();
  const std::vector<char> data = pattern(300001, 1);
  registrations->add(data.data(), data.size());
  StreamPair pair = connectPair(kGeometry, {}, 0, registrations);
  for (int round = 0; round < 5; ++round)
    ASSERT_TRUE(sendAndReceive(pair, data.data(), data.size()) == data) << "round " << round;
  EXPECT_EQ(pair.sender->zeroCopyBytes(), 5 * data.size());
  EXPECT_EQ(pair.fabric->bytesWrittenFrom(data.data()), 5 * data.size()) << "the writes did not read the buffer";
  EXPECT_EQ(pair.sender->userRegistrationsMade(), 1u) << "the steady state registered again";
}

// A program buffer the device refuses to register (past the locked-memory
// limit, say) is sent through staging, correctly, and not offered to the
// device again on every send.
TEST(ZeroCopySend, ABufferTheDeviceRefusesIsCopiedInstead) {
  auto registrations = std::make_shared<UserRegistrations>();
  const std::vector<char> data = pattern(300001, 2);
  registrations->add(data.data(), data.size());
  FakeOptions limited;
  limited.registrationLimitBytes = 200000;  // the streams' own buffers fit, the program's does not
  StreamPair pair = connectPair(kGeometry, limited, 0, registrations);
  for (int round = 0; round < 3; ++round)
    ASSERT_TRUE(sendAndReceive(pair, data.data(), data.size()) == data) << "round " << round;
  EXPECT_EQ(pair.sender->zeroCopyBytes(), 0u);
  EXPECT_EQ(pair.fabric->bytesWrittenFrom(data.data()), 0u);
  EXPECT_EQ(pair.sender->userRegistrationsMade(), 0u);
}

TEST(ZeroCopySend, UnregisteredBytesAndThoseAcrossABuffersEdgeAreCopied) {
  auto registrations = std::make_shared<UserRegistrations>();
  const std::vector<char> data = pattern(100000, 2);
  // The middle only: slots that start before it or run past it are copied.
  registrations->add(data.data() + 30000, 40000);
  StreamPair pair = connectPair(kGeometry, {}, 0, registrations);
  ASSERT_TRUE(sendAndReceive(pair, data.data(), data.size()) == data);
  EXPECT_GT(pair.sender->zeroCopyBytes(), 0u);
  EXPECT_LE(pair.sender->zeroCopyBytes(), 40000u);
}

// The connection may call a buffer's bytes sent (and its caller reuse it)
// only once the writes that read it have completed. Here the device runs
// each request a few polls after it was posted, and whatever the
// connection reports complete is overwritten at once: a byte reported too
// early would reach the receiver changed.
TEST(ZeroCopySend, BytesInFlightFromTheBufferAreNotCompleteYet) {
  auto registrations = std::make_shared<UserRegistrations>();
  std::vector<char> data = pattern(200000, 3);
  const std::vector<char> original = data;
  registrations->add(data.data(), data.size());
  FakeOptions slow;
  slow.delaySteps = 4;
  StreamPair pair = connectPair(kGeometry, slow, 0, registrations);
  CreditSendStream* stream = pair.sender.get();
  StreamSendConnection connection(std::move(pair.sender), "rank 1");
  connection.post(data.data(), data.size());
  std::vector<char> got(data.size());
  std::size_t received = 0, overwritten = 0;
  std::size_t mostHeld = 0;
  const auto giveUp = Clock::now() + std::chrono::seconds(20);
  while ((received < data.size() || connection.completedBytes() < data.size()) && Clock::now() < giveUp) {
    connection.progress();
    mostHeld = std::max(mostHeld, stream->heldBytes());
    for (const std::uint64_t done = connection.completedBytes(); overwritten < done; ++overwritten)
      data[overwritten] = static_cast<char>(~data[overwritten]);
    received += pair.receiver->tryRecv(got.data() + received, got.size() - received);
  }
  ASSERT_EQ(received, data.size());
  EXPECT_EQ(connection.completedBytes(), data.size());
  EXPECT_GT(mostHeld, 0u) << "no byte was ever held: nothing went without a copy";
  EXPECT_TRUE(got == original) << "bytes reported sent were still being read from the buffer";
}

TEST(ZeroCopySend, ADeregisteredBufferIsCopiedAgainAndItsRegistrationReleased) {
  auto registrations = std::make_shared<UserRegistrations>();
  const std::vector<char> data = pattern(50000, 4);
  const std::uint64_t id = registrations->add(data.data(), data.size());
  StreamPair pair = connectPair(kGeometry, {}, 0, registrations);
  ASSERT_TRUE(sendAndReceive(pair, data.data(), data.size()) == data);
  ASSERT_EQ(pair.sender->zeroCopyBytes(), data.size());
  const std::size_t registeredBefore = pair.fabric->registrations();
  registrations->remove(id);
  ASSERT_TRUE(sendAndReceive(pair, data.data(), data.size()) == data);
  EXPECT_EQ(pair.sender->zeroCopyBytes(), data.size()) << "a deregistered buffer was sent from";
  EXPECT_EQ(pair.fabric->registrations(), registeredBefore - 1) << "its registration with the queue pair stayed";
}

TEST(UserRegistrationsTable, FindsTheRangeHoldingABufferAndForgetsRemovedOnes) {
  UserRegistrations table;
  std::vector<char> memory(1000);
  const std::uint64_t a = table.add(memory.data(), 100);
  const std::uint64_t b = table.add(memory.data() + 500, 500);
  EXPECT_EQ(table.find(memory.data() + 10, 90)->id, a);
  EXPECT_FALSE(table.find(memory.data() + 10, 91)) << "runs past the end of the first range";
  EXPECT_FALSE(table.find(memory.data() + 400, 200)) << "starts before the second range";
  EXPECT_EQ(table.find(memory.data() + 999, 1)->id, b);
  const std::uint64_t before = table.generation();
  table.remove(a);
  EXPECT_NE(table.generation(), before);
  EXPECT_FALSE(table.live(a));
  EXPECT_FALSE(table.find(memory.data(), 1));
  EXPECT_TRUE(table.live(b));
}

}  // namespace
}  // namespace hora::transport::rdma
