// Operation stamps over shared memory (transport/shm/shm_connection.h): a
// stamp rides on the first bytes of its operation whichever FIFO carries
// them (a Simple slot's size word, or the line after an LL message's
// header), goes alone in an empty Simple slot when the operation sends
// nothing, and the receiver checks it before any byte of the operation
// leaves the FIFO. Where the two ends disagree, the receiver throws a
// StampMismatch carrying both stamps, whichever FIFO each end expected
// the operation to start on: it never waits for a stamp that went the
// other way, and never hands out the peer's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "byte_pattern.h"
#include "shm_pair.h"
#include "transport/op_stamp.h"

namespace hora::transport::testing {
namespace {

constexpr std::size_t kLL = 24;        // bytes that take LL (protocolFor)
constexpr std::size_t kSimple = 3000;  // bytes that take Simple

OpStamp stampOf(std::uint64_t call, std::uint64_t bytes) {
  OpStamp stamp;
  stamp.words = {call, bytes, 0x0102, 7};
  return stamp.seal();
}

class ShmStampsTest : public ShmConnectionTest {
 protected:
  // The sender's side of an operation of `bytes` (none: it sends nothing
  // here), stamped `stamp`; its data is the pattern at its position.
  void send(const OpStamp& stamp, std::size_t bytes) {
    sender->beginMessage(protocolFor(bytes), &stamp);
    const std::uint64_t at = sender->postedBytes();
    out_.push_back(patternBytes(bytes, at));
    if (bytes > 0) sender->post(out_.back().data(), bytes);
    sender->flushStamp();  // the executor's call once the operation posted all it sends
  }
  // The receiver's side: expects `bytes` (none: nothing from this peer).
  std::vector<char>& expect(const OpStamp& stamp, std::size_t bytes) {
    receiver->beginMessage(protocolFor(bytes), &stamp);
    in_.emplace_back(bytes, '\0');
    if (bytes > 0) receiver->post(in_.back().data(), bytes);
    return in_.back();
  }
  // A new connected pair in place of the one before (a test that tries
  // several cases, each on a stream of its own).
  void freshPair() {
    sender.reset();
    receiver.reset();
    SetUp();
    connectAndSettle();
  }
  // Both ends of operations that agree, one after the other, each checked
  // and its bytes intact.
  void agreeOn(const std::vector<std::size_t>& sizes) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "operation " << i << " of " << sizes[i] << " bytes");
      const OpStamp stamp = stampOf(++calls_, sizes[i]);
      const std::uint64_t at = sender->postedBytes();
      send(stamp, sizes[i]);
      std::vector<char>& in = expect(stamp, sizes[i]);
      ASSERT_TRUE(pumpUntil([&] {
        return receiver->completedBytes() == receiver->postedBytes() && receiver->stampChecked() &&
               !sender->stampPending();
      }));
      EXPECT_EQ(patternMismatches(in.data(), in.size(), at), 0u);
    }
  }
  // Progresses both ends until the receiver throws; what it threw.
  std::optional<StampMismatch> mismatchSoon() {
    const Deadline deadline = Deadline::after(kTimeout);
    while (!deadline.expired()) {
      try {
        sender->progress();
        receiver->progress();
        receiver->stampChecked();
      } catch (const StampMismatch& mismatch) {
        return mismatch;
      }
    }
    return std::nullopt;
  }

  std::uint64_t calls_ = 0;

 private:
  std::deque<std::vector<char>> out_, in_;  // stable while posted
};

// No byte of `in` was written (it starts zeroed).
bool untouched(const char* in, std::size_t bytes) {
  return std::all_of(in, in + bytes, [](char c) { return c == 0; });
}

void expectStamp(const std::optional<OpStamp>& actual, const OpStamp& expected, const char* which) {
  ASSERT_TRUE(actual.has_value()) << which << ": no stamp";
  EXPECT_EQ(actual->words, expected.words) << which;
}

TEST_F(ShmStampsTest, StampsRideOnEitherFifoOrGoAloneAndAreChecked) {
  connectAndSettle();
  agreeOn({kLL, kSimple, 0, kLL, kLL, 0, 0, kSimple, 8, 1, kShmLLMaxBytes, kShmLLMaxBytes + 1, kLL});
}

TEST_F(ShmStampsTest, ManyOperationsInFlightOnBothFifos) {
  // A group of messages to one peer: every stamp is begun before the
  // receiver reads anything, so both FIFOs hold several stamped
  // operations at once, and the receiver takes them in stream order.
  connectAndSettle();
  const std::vector<std::size_t> sizes = {kLL, 0, kSimple, kLL, 0, 0, kLL, kSimple, 4, 0};
  std::vector<OpStamp> stamps;
  for (std::size_t bytes : sizes) {
    stamps.push_back(stampOf(++calls_, bytes));
    send(stamps.back(), bytes);
  }
  sender->progress();
  const std::uint64_t start = receiver->postedBytes();
  std::vector<std::vector<char>*> ins;
  for (std::size_t i = 0; i < sizes.size(); ++i) ins.push_back(&expect(stamps[i], sizes[i]));
  ASSERT_TRUE(pumpUntil([&] {
    return receiver->completedBytes() == receiver->postedBytes() && receiver->stampChecked() &&
           !sender->stampPending();
  }));
  std::uint64_t at = start;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(patternMismatches(ins[i]->data(), sizes[i], at), 0u) << "operation " << i;
    at += sizes[i];
  }
}

TEST_F(ShmStampsTest, AStampSentAloneAheadOfItsBytesIsAccepted) {
  // A sender about to wait for a peer before it sends flushes its stamp,
  // which then leaves alone in an empty Simple slot; the operation's bytes
  // follow, unstamped, on whichever FIFO carries them (a ring's relay
  // whose previous rank is across the network). The receiver, whose first
  // byte comes from that FIFO, takes the stamp from the Simple slot,
  // whether it looks before the bytes came or after.
  connectAndSettle();
  for (std::size_t bytes : {kLL, kSimple, kLL, kLL, kSimple}) {
    for (bool receiverFirst : {true, false}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes, receiver first: " << receiverFirst);
      const OpStamp stamp = stampOf(++calls_, bytes);
      const std::uint64_t at = sender->postedBytes();
      sender->beginMessage(protocolFor(bytes), &stamp);
      sender->flushStamp();  // nothing posted yet: the stamp leaves alone
      std::vector<char>* in = nullptr;
      if (receiverFirst) {
        in = &expect(stamp, bytes);
        for (int pass = 0; pass < 3; ++pass) receiver->progress();
        EXPECT_EQ(receiver->stampsOutstanding(), 0u) << "the stamp alone was taken";
      }
      const std::vector<char> out = patternBytes(bytes, at);
      sender->post(out.data(), bytes);
      if (!receiverFirst) {
        sender->progress();
        in = &expect(stamp, bytes);
      }
      ASSERT_TRUE(pumpUntil([&] {
        return receiver->completedBytes() == receiver->postedBytes() && receiver->stampChecked() &&
               !sender->stampPending() && sender->completedBytes() == sender->postedBytes();
      }));
      EXPECT_EQ(patternMismatches(in->data(), bytes, at), 0u);
    }
  }
}

TEST_F(ShmStampsTest, StampedLLMessagesWaitForAFreeBoardEntry) {
  // LL keeps full stamps on a board of a few entries (protocols/ll.h): a
  // sender ahead of its receiver by that many stamped messages waits, so
  // that the entry of a message not yet read is never overwritten, and a
  // mismatch found late is still worded with the sender's own stamp.
  constexpr std::size_t kOps = 60, kEntries = 16, kOdd = 33;
  connectAndSettle();
  const std::uint64_t start = sender->postedBytes();
  std::vector<OpStamp> stamps;
  for (std::size_t i = 0; i < kOps; ++i) {
    stamps.push_back(stampOf(++calls_, kLL));
    send(stamps.back(), kLL);
  }
  for (int pass = 0; pass < 3; ++pass) sender->progress();
  EXPECT_EQ(sender->completedBytes() - start, kEntries * kLL) << "as many stamped messages as entries";
  for (std::size_t i = 0; i < kOps; ++i) expect(i == kOdd ? stampOf(999, kLL) : stamps[i], kLL);
  const std::optional<StampMismatch> mismatch = mismatchSoon();
  ASSERT_TRUE(mismatch.has_value()) << "no mismatch reported";
  expectStamp(mismatch->expected(), stampOf(999, kLL), "expected");
  expectStamp(mismatch->arrived(), stamps[kOdd], "arrived");
  EXPECT_EQ(receiver->completedBytes() - start, kOdd * kLL) << "every operation before it was read";
}

TEST_F(ShmStampsTest, AnotherOperationOnTheSameFifoIsCaughtWithBothStamps) {
  for (std::size_t bytes : {kLL, kSimple}) {
    SCOPED_TRACE(::testing::Message() << bytes << " bytes");
    freshPair();
    agreeOn({kLL, kSimple});
    const OpStamp theirs = stampOf(calls_ + 1, bytes), mine = stampOf(calls_ + 2, bytes);
    send(theirs, bytes);
    std::vector<char>& in = expect(mine, bytes);
    const std::optional<StampMismatch> mismatch = mismatchSoon();
    ASSERT_TRUE(mismatch.has_value()) << "no mismatch reported";
    expectStamp(mismatch->expected(), mine, "expected");
    expectStamp(mismatch->arrived(), theirs, "arrived");
    EXPECT_EQ(mismatch->peer(), kSenderName);
    EXPECT_TRUE(untouched(in.data(), bytes)) << "bytes of the other operation landed";
  }
}

TEST_F(ShmStampsTest, AnOperationThatStartedOnTheOtherFifoIsCaught) {
  // The sender's operation begins on one FIFO (or sends nothing: its stamp
  // alone on Simple), the receiver's on the other (or receives nothing):
  // the receiver must not wait for a stamp that went the other way.
  struct Case {
    std::size_t sent, expected;
  };
  for (const Case c : {Case{kLL, kSimple}, Case{kSimple, kLL}, Case{0, kLL}, Case{kLL, 0}, Case{0, kSimple},
                       Case{kSimple, 0}}) {
    SCOPED_TRACE(::testing::Message() << "sent " << c.sent << " bytes, expected " << c.expected);
    freshPair();
    agreeOn({kSimple, kLL});
    const OpStamp theirs = stampOf(calls_ + 1, c.sent), mine = stampOf(calls_ + 1, c.expected);
    send(theirs, c.sent);
    std::vector<char>& in = expect(mine, c.expected);
    const std::optional<StampMismatch> mismatch = mismatchSoon();
    ASSERT_TRUE(mismatch.has_value()) << "no mismatch reported";
    expectStamp(mismatch->expected(), mine, "expected");
    expectStamp(mismatch->arrived(), theirs, "arrived");
    if (c.expected > 0 && c.sent > 0) {
      EXPECT_TRUE(untouched(in.data(), c.expected)) << "the peer's bytes landed";
    }
  }
}

TEST_F(ShmStampsTest, AStampWhereMoreBytesWereExpectedIsCaught) {
  // The receiver still expects bytes of its checked operation; the peer
  // has begun the next one. Its first bytes carry a stamp where none is
  // due, on either FIFO.
  for (std::size_t bytes : {kLL, kSimple}) {
    SCOPED_TRACE(::testing::Message() << bytes << " bytes");
    freshPair();
    const OpStamp first = stampOf(1, bytes), second = stampOf(2, bytes);
    send(first, bytes);
    send(second, bytes);
    std::vector<char>& in = expect(first, 2 * bytes);  // one operation of twice the size
    const std::optional<StampMismatch> mismatch = mismatchSoon();
    ASSERT_TRUE(mismatch.has_value()) << "no mismatch reported";
    EXPECT_FALSE(mismatch->expected().has_value()) << "nothing was due";
    expectStamp(mismatch->arrived(), second, "arrived");
    EXPECT_TRUE(untouched(in.data() + bytes, bytes)) << "the next operation's bytes landed";
  }
}

TEST_F(ShmStampsTest, BytesWithoutAStampWhereOneIsDueAreCaught) {
  // The sender runs with the check off (no stamp), the receiver with it on.
  for (std::size_t bytes : {kLL, kSimple}) {
    SCOPED_TRACE(::testing::Message() << bytes << " bytes");
    freshPair();
    std::vector<char> out = patternBytes(bytes, sender->postedBytes());
    sender->beginMessage(protocolFor(bytes), nullptr);
    sender->post(out.data(), bytes);
    const OpStamp mine = stampOf(1, bytes);
    expect(mine, bytes);
    const std::optional<StampMismatch> mismatch = mismatchSoon();
    ASSERT_TRUE(mismatch.has_value()) << "no mismatch reported";
    expectStamp(mismatch->expected(), mine, "expected");
    EXPECT_FALSE(mismatch->arrived().has_value()) << "no stamp came";
  }
}

// Stamps that go alone fill slots without counting as bytes: a sender
// whose FIFO they filled, with one more waiting, still notices that the
// receiver has gone (not at the deadline, as if nothing were owed).
TEST_F(ShmStampsTest, ASenderWaitingToSendAStampNoticesTheReceiverLeft) {
  connectAndSettle();
  std::uint64_t call = 0;
  std::size_t sent = 0;
  // Operations that send nothing here, until one stamp no longer fits.
  for (; sent < 1000 && sender->idle(); ++sent) {
    send(stampOf(++call, 0), 0);
    sender->progress();
  }
  ASSERT_FALSE(sender->idle()) << "the FIFO never filled with stamps";
  EXPECT_EQ(sender->acknowledgedBytes(), sender->postedBytes()) << "stamps count as no bytes";
  EXPECT_NO_THROW(sender->checkAlive()) << "the receiver is alive";
  receiver.reset();
  Error error = errorSoon([&] { sender->checkAlive(); });
  EXPECT_EQ(error.kind(), ErrorKind::Remote) << error.what();
  EXPECT_NE(std::string(error.what()).find(kReceiverName), std::string::npos) << error.what();
}

}  // namespace
}  // namespace hora::transport::testing
