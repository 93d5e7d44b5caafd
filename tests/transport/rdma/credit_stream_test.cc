// The RDMA credit protocol (src/transport/rdma/credit_stream.h) over the
// fake reliable-connected device: protocol coverage only. Nothing here has
// run on an InfiniBand or RoCE NIC.
#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "base/error.h"
#include "fake_queue_pair.h"
#include "stream_pair.h"
#include "transport/rdma/credit_stream.h"

namespace hora::transport::rdma {
namespace {

using testing::FakeFabric;
using testing::FakeOptions;
using testing::FakeQueuePair;
using testing::StreamPair;
using testing::connectPair;

// What `calls` throws must be a peer's failure naming the peer (rank 1);
// its text, for further checks. `unnoticed` says what went on otherwise.
std::string remoteErrorNamingRank1(const std::function<void()>& calls, const char* unnoticed) {
  try {
    calls();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Remote);
    EXPECT_NE(std::string(error.what()).find("rank 1"), std::string::npos) << error.what();
    return error.what();
  }
  ADD_FAILURE() << unnoticed;
  return {};
}

// Streams `total` bytes of a pattern in pieces of random sizes (some sent
// as two buffers at once) while reading in pieces of other random sizes,
// on two threads; checks every byte.
void streamAndCheck(StreamPair& pair, std::size_t total, std::uint32_t seed) {
  std::vector<char> data(total);
  std::mt19937 random(seed);
  for (char& byte : data) byte = static_cast<char>(random());
  std::thread sending([&] {
    std::mt19937 sizes(seed + 1);
    std::size_t sent = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (sent < total && std::chrono::steady_clock::now() < deadline) {
      const std::size_t a = std::min<std::size_t>(total - sent, sizes() % 700);
      const std::size_t b = std::min<std::size_t>(total - sent - a, sizes() % 300);
      sent += pair.sender->trySendTwo(data.data() + sent, a, data.data() + sent + a, b);
    }
    EXPECT_EQ(sent, total) << "the sender stalled";
  });
  std::vector<char> got(total);
  std::mt19937 sizes(seed + 2);
  std::size_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (received < total && std::chrono::steady_clock::now() < deadline) {
    const std::size_t want = std::min<std::size_t>(total - received, 1 + sizes() % 900);
    received += pair.receiver->tryRecv(got.data() + received, want);
  }
  sending.join();
  ASSERT_EQ(received, total) << "the receiver stalled";
  EXPECT_TRUE(data == got) << "the stream's bytes differ";
}

TEST(CreditStream, BytesArriveInOrderThroughFewSmallSlots) {
  StreamPair pair = connectPair({3, 256});
  streamAndCheck(pair, 200000, 1);
}

TEST(CreditStream, BytesArriveInOrderWhenTheDeviceIsSlow) {
  FakeOptions slow;
  slow.delaySteps = 3;  // every request runs a few polls after it was posted
  StreamPair pair = connectPair({4, 1024}, slow);
  streamAndCheck(pair, 300000, 2);
}

// NCCL_IB_QPS_PER_CONNECTION: slots take turns over three queue pairs,
// each slower than the one before, so their completions come out of grant
// order; the receiver must still hand the bytes out in order.
TEST(CreditStream, BytesArriveInOrderOverSeveralQueuePairs) {
  StreamPair pair = connectPair({6, 512}, {}, /*extraQueuePairs=*/2);
  streamAndCheck(pair, 300000, 4);
}

TEST(CreditStream, ASendQueueShorterThanTheSlotsIsNeverOverrun) {
  FakeOptions shallow;
  shallow.sendQueueDepth = 8;  // room for 4 sends of 2 requests, with 8 slots granted
  StreamPair pair = connectPair({8, 512}, shallow);
  streamAndCheck(pair, 100000, 3);
}

// A receiver whose send queue holds fewer credit writes than it has slots
// grants them as room comes back (a grant's entry is free only once its
// completion is polled), in order; with the device slow, more at once
// would overflow the queue, which the fake reports.
TEST(CreditStream, AReceiverWithAShortSendQueueGrantsAsRoomComesBack) {
  FakeOptions shortAndSlow;
  shortAndSlow.sendQueueDepth = 2;
  shortAndSlow.delaySteps = 3;
  StreamPair pair = connectPair({8, 256}, shortAndSlow);
  streamAndCheck(pair, 100000, 6);
}

TEST(CreditStream, NoCreditNoSend) {
  StreamPair pair = connectPair({2, 64});
  std::vector<char> data(1000, 'x');
  std::size_t sent = 0;
  char sink = 0;
  for (int i = 0; i < 100; ++i) {
    sent += pair.sender->trySend(data.data() + sent, data.size() - sent);
    pair.receiver->tryRecv(&sink, 0);  // lets the receiver finish set-up and grant, reads nothing
  }
  EXPECT_EQ(sent, 128u) << "two slots of 64 bytes, nothing read: no more may go";
}

// A sender whose slots are all taken waits for a credit, which comes as a
// plain RDMA write and wakes no completion channel: it must not sleep on
// the queue pair's fd then (a verbs sender would sleep until the wait's
// 20 ms slice ended), but look again soon. Once a credit is there, it may.
TEST(CreditStream, ASenderWaitingForACreditDoesNotSleepOnTheCompletionChannel) {
  FakeOptions withFd;
  withFd.reportsEventFd = true;
  StreamPair pair = connectPair({2, 64}, withFd);
  std::vector<char> data(1000, 'x');
  std::size_t sent = 0;
  char sink[64];
  for (int i = 0; i < 100; ++i) {
    sent += pair.sender->trySend(data.data() + sent, data.size() - sent);
    pair.receiver->tryRecv(sink, 0);  // grants, reads nothing
  }
  ASSERT_EQ(sent, 128u);
  EXPECT_EQ(pair.sender->pollEntry(/*sending=*/true).fd, -1) << "a sender waiting for a credit sleeps on its queue";
  // The receiver reads a slot and grants it again: the sender has a credit.
  std::size_t read = 0;
  for (int i = 0; i < 100 && read < 64; ++i) {
    read += pair.receiver->tryRecv(sink + read, 64 - read);
    pair.sender->trySend(data.data(), 0);  // polls completions, sends nothing
  }
  ASSERT_EQ(read, 64u);
  EXPECT_GE(pair.sender->pollEntry(/*sending=*/true).fd, 0) << "with a credit there, the fake's fd is the one to sleep on";
}

// A peer may write into a stream's registered memory (slots, staging,
// credit ring) until the stream's queue pairs are closed: a stream that
// freed its buffers first would let a late write land in freed memory (a
// crash when it was unmapped, silent corruption when the heap reused it).
// With every block above 64 KiB from mmap, freed means unmapped, which the
// fake device sees when a queue pair closes.
TEST(CreditStream, QueuePairsCloseBeforeTheirRegisteredMemoryIsFreed) {
  ASSERT_EQ(::mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
  StreamPair pair = connectPair({8, 64 * 1024});
  streamAndCheck(pair, 2u << 20, 5);
  pair.receiver.reset();
  pair.sender.reset();
  EXPECT_EQ(pair.fabric->regionsReleasedWhileRegistered(), 0)
      << "a stream freed memory that its queue pairs still had registered";
}

TEST(CreditStream, ADeadPeerIsAnErrorNamingIt) {
  StreamPair pair = connectPair({2, 64});
  char byte = 1;
  pair.sender->trySend(&byte, 0);    // set-up finishes: the sender connects,
  pair.receiver->tryRecv(&byte, 0);  // the receiver grants its slots
  pair.recvQp->kill();
  const std::string text = remoteErrorNamingRank1(
      [&] {
        for (int i = 0; i < 10; ++i) pair.sender->trySend(&byte, 1);
      },
      "sending to a dead peer went on");
  EXPECT_NE(text.find("retries exceeded"), std::string::npos) << text;
}

// A sender that finished may close its end while the receiver still
// drains the slots it filled (a rank that returned from its last
// collective and destroyed its communicator): the grants that follow then
// fail. The bytes that came are still handed out; only wanting more is an
// error. (Over libfabric's tcp provider this failed a live job now and
// then: the grant's write met EPIPE.)
TEST(CreditStream, AGrantToASenderThatClosedFailsOnlyWhenMoreBytesAreWanted) {
  StreamPair pair = connectPair({2, 64});
  char byte = 0;
  pair.sender->trySend(&byte, 0);    // set-up finishes: the sender connects,
  pair.receiver->tryRecv(&byte, 0);  // the receiver grants its slots
  std::vector<char> data(100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 1);
  std::size_t sent = 0;
  for (int i = 0; i < 1000 && sent < data.size(); ++i) sent += pair.sender->trySend(data.data() + sent, data.size() - sent);
  ASSERT_EQ(sent, data.size());
  // Both slots are written (polling makes the fake device move them), and
  // then the sender's end is gone.
  for (int i = 0; i < 10; ++i) pair.sender->trySend(&byte, 0);
  pair.sendQp->kill();
  std::vector<char> got(data.size());
  std::size_t received = 0;
  for (int i = 0; i < 1000 && received < got.size(); ++i) {
    // A few bytes at a time: the grant after the first slot goes out (and
    // fails) before the second slot is read.
    const std::size_t want = std::min<std::size_t>(10, got.size() - received);
    ASSERT_NO_THROW(received += pair.receiver->tryRecv(got.data() + received, want))
        << "after " << received << " bytes";
  }
  ASSERT_EQ(received, got.size());
  EXPECT_TRUE(data == got);
  remoteErrorNamingRank1(
      [&] {
        for (int i = 0; i < 10; ++i) pair.receiver->tryRecv(&byte, 1);
      },
      "waiting for bytes from a sender that is gone went on");
}

// A sender that has handed its last bytes to the device and closes at once
// (a rank that returns from its last collective and destroys its
// communicator): closing a queue pair discards the requests it has not
// carried out, so the sender first waits for its writes, and the receiver
// still gets every byte. (Found by the collectives matrix over the fake
// device: the receiver failed with "transport retries exceeded".)
TEST(CreditStream, ASenderThatClosesRightAfterItsLastSendStillDeliversIt) {
  FakeOptions options;
  options.delaySteps = 3;  // requests land three polls after they were posted
  StreamPair pair = connectPair({4, 64}, options);
  std::vector<char> data(200);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 5 + 3);
  std::size_t sent = 0;
  char none = 0;
  for (int i = 0; i < 1000 && sent < data.size(); ++i) {
    sent += pair.sender->trySend(data.data() + sent, data.size() - sent);
    pair.receiver->tryRecv(&none, 0);  // grants go out (nothing read yet)
  }
  ASSERT_EQ(sent, data.size());
  pair.sender.reset();  // at once: the last writes were only posted
  std::vector<char> got(data.size());
  std::size_t received = 0;
  for (int i = 0; i < 1000 && received < got.size(); ++i)
    ASSERT_NO_THROW(received += pair.receiver->tryRecv(got.data() + received, got.size() - received))
        << "after " << received << " bytes";
  ASSERT_EQ(received, got.size());
  EXPECT_TRUE(data == got);
}

// Least privilege: of a connection's four registrations, only the two that
// peers write into (the receiver's slots, the sender's credit ring) allow
// remote writes; the sender's staging and the receiver's outgoing grants
// are only read by their own side's writes.
TEST(CreditStream, OnlyTheSlotsAndTheCreditRingAreOpenToThePeersWrites) {
  StreamPair pair = connectPair({4, 256});
  streamAndCheck(pair, 10000, 9);
  EXPECT_EQ(pair.fabric->registrations(Access::RemoteWrite), 2u);
  EXPECT_EQ(pair.fabric->registrations(Access::LocalRead), 2u);
}

TEST(CreditStream, AClosedLifelineIsAnErrorNamingThePeer) {
  StreamPair pair = connectPair({2, 64});
  char byte = 0;
  pair.sender->trySend(&byte, 0);  // set-up finishes: the lifeline is a lifeline from now on
  EXPECT_NO_THROW(pair.sender->checkAlive());
  ::shutdown(pair.receiverLifeline, SHUT_RDWR);
  remoteErrorNamingRank1([&] { pair.sender->checkAlive(); }, "the closed lifeline went unnoticed");
}

// The fake device itself: the failures the protocol must be able to meet.
class FakeDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric_ = std::make_shared<FakeFabric>();
    FakeOptions options;
    options.sendQueueDepth = 4;
    a_ = fabric_->createQueuePair(options);
    b_ = fabric_->createQueuePair(options);
    a_->connect(b_->address());
    b_->connect(a_->address());
    local_ = a_->registerMemory(source_, sizeof(source_), 0, Access::LocalRead);
    remote_ = b_->registerMemory(target_, sizeof(target_), 0, Access::RemoteWrite);
  }
  std::vector<Completion> drain(FakeQueuePair& qp) {
    std::vector<Completion> all;
    Completion some[8];
    for (int round = 0; round < 4; ++round)
      for (std::size_t n = qp.poll(some, 8), i = 0; i < n; ++i) all.push_back(some[i]);
    return all;
  }
  RemoteMemory target(std::size_t offset = 0) const {
    return {reinterpret_cast<std::uint64_t>(target_) + offset, remote_.remoteKey};
  }
  std::shared_ptr<FakeFabric> fabric_;
  std::unique_ptr<FakeQueuePair> a_, b_;
  char source_[64] = "payload";
  char target_[64] = {};
  Region local_, remote_;
};

TEST_F(FakeDevice, AWriteLandsAndASignaledOneCompletes) {
  a_->postWrite(local_, 0, 8, target(), 7, true);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::Success);
  EXPECT_EQ(done[0].id, 7u);
  EXPECT_STREQ(target_, "payload");
}

TEST_F(FakeDevice, AWrongKeyOrBoundsIsARemoteAccessErrorThenEverythingIsFlushed) {
  b_->postReceive(7);
  a_->postWrite(local_, 0, 8, {target().address, remote_.remoteKey + 99}, 1, false);
  a_->postWrite(local_, 0, 8, target(), 2, true);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, Status::RemoteAccessError) << "unsignaled, yet a failure reports";
  EXPECT_EQ(done[1].status, Status::Flushed);
  EXPECT_TRUE(a_->inError());
  a_->postWrite(local_, 0, 8, target(), 3, true);
  done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::Flushed) << "posted after the failure";
  EXPECT_EQ(target_[0], 0) << "nothing may land";
  // The responder is in error as well: its posted receive is flushed.
  EXPECT_TRUE(b_->inError());
  const auto flushed = drain(*b_);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].operation, Operation::Receive);
  EXPECT_EQ(flushed[0].status, Status::Flushed);
}

TEST_F(FakeDevice, AWritePastTheRegionIsARemoteAccessError) {
  a_->postWrite(local_, 0, 16, target(56), 1, true);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::RemoteAccessError);
}

// Memory registered for this side's reads only (a write's source) is no
// target for a peer: its key is valid and the range inside, and still the
// write fails, as verbs fails one into memory without remote-write access.
TEST_F(FakeDevice, AWriteIntoMemoryRegisteredForLocalReadsIsARemoteAccessError) {
  char readOnly[64] = {};
  const Region sourceOnly = b_->registerMemory(readOnly, sizeof(readOnly), 0, Access::LocalRead);
  a_->postWrite(local_, 0, 8, {sourceOnly.remoteAt(0), sourceOnly.remoteKey}, 1, true);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::RemoteAccessError);
  EXPECT_EQ(readOnly[0], 0) << "nothing may land";
}

TEST_F(FakeDevice, AnImmediateWithoutAPostedReceiveIsReceiverNotReady) {
  a_->postWriteWithImmediate(5, 1);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::ReceiverNotReady);
  b_->postReceive(9);
  a_->postWriteWithImmediate(5, 2);
  EXPECT_EQ(drain(*a_).at(0).status, Status::Flushed);
}

TEST_F(FakeDevice, AnImmediateCompletesThePeersReceiveAfterTheWriteBeforeIt) {
  b_->postReceive(9);
  a_->postWrite(local_, 0, 8, target(), 1, false);
  a_->postWriteWithImmediate(0xabc, 2);
  auto received = drain(*b_);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].operation, Operation::Receive);
  EXPECT_EQ(received[0].immediate, 0xabcu);
  EXPECT_STREQ(target_, "payload");
}

TEST_F(FakeDevice, TooManyUnsignaledWritesOverflowTheSendQueue) {
  for (int i = 0; i < 4; ++i) a_->postWrite(local_, 0, 8, target(), i, false);
  EXPECT_THROW(a_->postWrite(local_, 0, 8, target(), 4, false), Error);
}

TEST_F(FakeDevice, RequestsToADeadPeerFailWithRetryExceeded) {
  b_->kill();
  a_->postWrite(local_, 0, 8, target(), 1, true);
  auto done = drain(*a_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, Status::RetryExceeded);
}

}  // namespace
}  // namespace hora::transport::rdma
