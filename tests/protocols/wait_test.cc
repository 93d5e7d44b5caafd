// Every wait ends: a receiver whose sender never sends, and a sender whose
// receiver never reads, return TimedOut once their deadline passes, and
// Aborted soon after another thread raises the FIFO's abort flag, long
// before their deadline. Filling the FIFO first also checks its capacity:
// the sender stops exactly when one more message would overwrite an unread
// one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "harness.h"

namespace hora::protocols::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSlotBytes = 32;
constexpr std::uint64_t kSlots = 3;
constexpr auto kShort = 50ms;
// Generous upper bounds: the machine may be busy compiling.
constexpr auto kLate = 2s;

template <class P>
class Wait : public ::testing::Test {
 protected:
  Wait() : fifo_(kSlotBytes, kSlots) {}
  const FifoHandle& fifo() const { return fifo_.handle(); }

  // Sends empty messages until the FIFO is full; how many went in.
  std::uint64_t fill(typename P::Sender& sender) {
    std::uint64_t sent = 0;
    while (sender.send(nullptr, 0, 0) == Status::Ok) ++sent;
    return sent;
  }
  // The wait `run` does, with a deadline far away, while another thread
  // raises the abort flag after a while.
  template <class Run>
  void expectAbortedPromptly(Run run) {
    std::thread aborter([&] {
      std::this_thread::sleep_for(20ms);
      raiseAbort(fifo());
    });
    const auto start = Clock::now();
    EXPECT_EQ(run(HostOrdering::deadlineAfter(60s)), Status::Aborted);
    EXPECT_LT(Clock::now() - start, kLate);
    aborter.join();
  }
  template <class Run>
  void expectTimedOut(Run run) {
    const auto start = Clock::now();
    EXPECT_EQ(run(HostOrdering::deadlineAfter(kShort)), Status::TimedOut);
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, kShort);
    EXPECT_LT(waited, kLate);
  }

 private:
  OwnedFifo fifo_;
};
TYPED_TEST_SUITE(Wait, HostProtocols, ProtocolNames);

TYPED_TEST(Wait, ReceiverTimesOutWithoutASender) {
  typename TypeParam::Receiver receiver(this->fifo());
  char buffer[8];
  std::size_t bytes = 0;
  this->expectTimedOut([&](std::uint64_t deadline) { return receiver.recv(buffer, sizeof(buffer), &bytes, deadline); });
  // Nothing was consumed: a message sent now still arrives.
  typename TypeParam::Sender sender(this->fifo());
  ASSERT_EQ(sender.send("abc", 3, kNoDeadline), Status::Ok);
  EXPECT_EQ(receiver.recv(buffer, sizeof(buffer), &bytes, kNoDeadline), Status::Ok);
  EXPECT_EQ(bytes, 3u);
}

TYPED_TEST(Wait, ReceiverAbortsWhenTheFlagIsRaised) {
  typename TypeParam::Receiver receiver(this->fifo());
  char buffer[8];
  std::size_t bytes = 0;
  this->expectAbortedPromptly(
      [&](std::uint64_t deadline) { return receiver.recv(buffer, sizeof(buffer), &bytes, deadline); });
}

TYPED_TEST(Wait, SenderTimesOutOnAFullFifo) {
  typename TypeParam::Sender sender(this->fifo());
  EXPECT_EQ(this->fill(sender), TypeParam::emptyMessagesThatFit(this->fifo()));
  this->expectTimedOut([&](std::uint64_t deadline) { return sender.send("x", 1, deadline); });
  // Reading one message makes room again.
  typename TypeParam::Receiver receiver(this->fifo());
  std::size_t bytes = 1;
  ASSERT_EQ(receiver.recv(nullptr, 0, &bytes, kNoDeadline), Status::Ok);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(sender.send(nullptr, 0, HostOrdering::deadlineAfter(kLate)), Status::Ok);
}

TYPED_TEST(Wait, SenderAbortsWhenTheFlagIsRaised) {
  typename TypeParam::Sender sender(this->fifo());
  this->fill(sender);
  this->expectAbortedPromptly([&](std::uint64_t deadline) { return sender.send("x", 1, deadline); });
}

// hora's Deadline in the host policy's clock: never stays never, and a
// deadline 50 ms out is 50 ms out.
TEST(HostDeadline, TranslatesHorasDeadline) {
  EXPECT_EQ(HostOrdering::deadlineOf(Deadline::never()), kNoDeadline);
  const std::uint64_t before = HostOrdering::now();
  const std::uint64_t deadline = HostOrdering::deadlineOf(Deadline::after(kShort));
  const std::uint64_t after = HostOrdering::now();
  const auto shortNs = static_cast<std::uint64_t>(std::chrono::nanoseconds(kShort).count());
  EXPECT_GE(deadline, before + shortNs);
  EXPECT_LE(deadline, after + shortNs);
}

// A watch ends a wait with its status once it gives up (after one more
// look at the condition), is asked only on the slow path (every
// kCheckEvery polls), and never overrides a condition that holds.
TEST(WaitWatch, EndsTheWaitWithItsStatusOnTheSlowPath) {
  std::uint64_t polls = 0, asked = 0;
  const Status status = spinUntil<HostOrdering>(
      [&] {
        ++polls;
        return false;
      },
      nullptr, kNoDeadline,
      [&] { return ++asked == 3 ? Status::OtherProtocol : Status::Ok; });
  EXPECT_EQ(status, Status::OtherProtocol);
  EXPECT_EQ(asked, 3u);
  EXPECT_EQ(polls, 3 * kCheckEvery + 1);
  EXPECT_EQ(spinUntil<HostOrdering>([] { return true; }, nullptr, kNoDeadline,
                                    [] { return Status::OtherProtocol; }),
            Status::Ok);
}

// SimpleReceiver::waitData passes its watch on: a receiver with nothing to
// read ends with the watch's status, long before its deadline.
TEST(WaitWatch, SimpleReceiverEndsWithItsWatchsStatus) {
  OwnedFifo fifo(32, 3);
  SimpleReceiver<HostOrdering> receiver(fifo.handle());
  SimplePiece piece{};
  int asked = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(receiver.waitData(&piece, HostOrdering::deadlineAfter(std::chrono::seconds(60)),
                              [&] { return ++asked < 10 ? Status::Ok : Status::OtherProtocol; }),
            Status::OtherProtocol);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(asked, 10);
  // Nothing was consumed: a slot published now is read.
  SimpleSender<HostOrdering> sender(fifo.handle());
  ASSERT_EQ(sender.send("abc", 3, kNoDeadline), Status::Ok);
  EXPECT_EQ(receiver.waitData(&piece, kNoDeadline, [] { return Status::OtherProtocol; }), Status::Ok);
  EXPECT_EQ(piece.bytes, 3u);
}

// A FIFO's abort line is the word of its block that both sides write
// (fifo_handle.h), wherever the handle's abortFlag points.
TEST(StopLine, IsTheBlocksAbortLine) {
  OwnedFifo fifo(32, 3);
  EXPECT_EQ(abortLineOf(fifo.handle()), fifo.handle().abortFlag);
  FifoHandle elsewhere = fifo.handle();
  std::uint32_t flag = 0;
  elsewhere.abortFlag = &flag;
  EXPECT_EQ(abortLineOf(elsewhere), fifo.handle().abortFlag);
  EXPECT_EQ(abortLineOf(FifoHandle{}), nullptr);
}

// Two watches: the first is asked first, the second only while the first
// says go on.
TEST(StopLine, EitherWatchAsksTheFirstFirst) {
  int firstAsked = 0, secondAsked = 0;
  auto first = [&] { return ++firstAsked == 2 ? Status::PeerStopped : Status::Ok; };
  auto second = [&] {
    ++secondAsked;
    return Status::Ok;
  };
  EitherWatch<decltype(first), decltype(second)> both{first, second};
  EXPECT_EQ(both(), Status::Ok);
  EXPECT_EQ(both(), Status::PeerStopped);
  EXPECT_EQ(secondAsked, 1);
  std::uint32_t line = 0;
  EXPECT_EQ((StopLineWatch<HostOrdering>{&line}()), Status::Ok);
  line = 5;
  EXPECT_EQ((StopLineWatch<HostOrdering>{&line}()), Status::PeerStopped);
  EXPECT_EQ((StopLineWatch<HostOrdering>{nullptr}()), Status::Ok);
}

// A peer that sends its last piece and then stops: the wait that sees the
// line looks at its condition once more, and takes the piece that came
// before the stop instead of refusing it. Here the piece arrives between
// the wait's last look and its look at the line.
TEST(StopLine, APieceSentBeforeTheStopIsStillTaken) {
  std::uint32_t line = 7, flag = 0;
  std::uint32_t looks = 0;
  auto ready = [&] { return ++looks > kCheckEvery; };  // false up to the line's look, then true
  EXPECT_EQ(spinUntil<HostOrdering>(ready, &flag, kNoDeadline, StopLineWatch<HostOrdering>{&line}), Status::Ok);
  EXPECT_EQ(looks, kCheckEvery + 1);
  // Nothing came: the stop ends the wait at the line's first look.
  looks = 0;
  auto never = [&] {
    ++looks;
    return false;
  };
  EXPECT_EQ(spinUntil<HostOrdering>(never, &flag, kNoDeadline, StopLineWatch<HostOrdering>{&line}),
            Status::PeerStopped);
  EXPECT_EQ(looks, kCheckEvery + 1);
}

// Where a wait's abort flag is another word (a kernel polls one in
// host-mapped memory), a side that stops says so on the FIFO's abort line,
// and the other side's waits, for data and for room, Simple and LL, end
// with PeerStopped soon after, long before their deadline.
TEST(StopLine, EndsEveryWaitOfTheOtherSide) {
  constexpr std::uint64_t kSlotBytesHere = 64, kSlotsHere = 2;
  for (int side = 0; side < 3; ++side) {
    SCOPED_TRACE(side == 0 ? "Simple receiver" : side == 1 ? "Simple sender" : "LL sender");
    OwnedFifo fifo(kSlotBytesHere, kSlotsHere);
    FifoHandle handle = fifo.handle();
    std::uint32_t flag = 0;  // never raised
    handle.abortFlag = &flag;
    std::uint32_t* line = abortLineOf(handle);
    const StopLineWatch<HostOrdering> watch{line};
    const std::uint64_t deadline = HostOrdering::deadlineAfter(std::chrono::seconds(60));
    SimpleSender<HostOrdering> simple(handle);
    LLSender<HostOrdering> ll(handle);
    // A full FIFO, so that a sender must wait for room.
    if (side == 1) {
      for (std::uint64_t m = 0; m < kSlotsHere; ++m) ASSERT_EQ(simple.send("x", 1, deadline), Status::Ok);
    }
    if (side == 2) {
      while (ll.send("x", 1, HostOrdering::deadlineAfter(std::chrono::milliseconds(0))) == Status::Ok) {
      }
    }
    std::thread stopper([line] {
      std::this_thread::sleep_for(kShort);
      HostOrdering::storeFlag(line, 3);  // rank 2 stopped first
    });
    const auto start = Clock::now();
    Status status = Status::Ok;
    if (side == 0) {
      SimpleReceiver<HostOrdering> receiver(handle);
      SimplePiece piece{};
      status = receiver.waitData(&piece, deadline, watch);
    } else if (side == 1) {
      char* slot = nullptr;
      status = simple.waitRoom(&slot, deadline, watch);
    } else {
      status = ll.waitRoom(1, deadline, watch);
    }
    stopper.join();
    EXPECT_EQ(status, Status::PeerStopped);
    EXPECT_GE(Clock::now() - start, kShort);
    EXPECT_LT(Clock::now() - start, kLate);
    EXPECT_EQ(HostOrdering::loadFlag(line), 3u);
    EXPECT_EQ(flag, 0u);
  }
}

}  // namespace
}  // namespace hora::protocols::testing
