// The checker must be able to fail: deliberately broken copies of the
// schedules, each with one mistake, and the finding the checker must report.
// Without these, a simulator that accepted everything would pass the suite.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/direct.h"
#include "algorithms/primitives.h"
#include "algorithms/ring.h"
#include "collective_checks.h"
#include "schedule_cases.h"
#include "simulator.h"

namespace hora::schedule_test {

// The contract's concept refuses a type that lacks a primitive.
struct WithoutFanIn {
  void send(int, std::size_t, std::size_t);
  void recv(int, std::size_t, std::size_t);
  void recvReduceSend(int, int, std::size_t, std::size_t);
  void recvReduceCopy(int, std::size_t, std::size_t, std::size_t);
  void recvReduceCopySend(int, int, std::size_t, std::size_t, std::size_t);
  void recvCopySend(int, int, std::size_t, std::size_t);
  void copySend(int, std::size_t, std::size_t, std::size_t);
  void localReduceCopy(std::size_t, std::size_t, std::size_t);
  void localCopy(std::size_t, std::size_t, std::size_t);
};
static_assert(!algorithms::Primitives<WithoutFanIn>);
namespace {

using algorithms::Channel;
using algorithms::Range;
using algorithms::Ring;
using algorithms::channelPart;
using algorithms::minSize;

std::vector<int> identity(int n) {
  std::vector<int> order(n);
  for (int r = 0; r < n; ++r) order[r] = r;
  return order;
}

// Plays `schedule` (called as schedule(p, ring, channel) on every rank and
// channel, ring in c's order) and checks the result as case c.
template <typename Schedule>
std::vector<std::string> judge(const Case& c, Schedule&& schedule) {
  return checkCase(c, recordAndSimulate(layoutOf(c), [&](RecordingPrimitives& p, int rank,
                                                         Channel channel) {
    int pos = 0;
    while (c.order[pos] != rank) ++pos;
    schedule(p, Ring{c.nranks(), pos, c.order.data()}, channel);
  }));
}

std::string joined(const std::vector<std::string>& errors) {
  std::string text;
  for (const std::string& error : errors) text += "\n  " + error;
  return text.empty() ? " (no errors)" : text;
}

// The checker reported a finding containing `words`.
::testing::AssertionResult reports(const std::vector<std::string>& errors, const std::string& words) {
  for (const std::string& error : errors)
    if (error.find(words) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected a report of \"" << words << "\", got" << joined(errors);
}

// The loop of the ring all-gather, calling body(at, len) for each part of
// this channel: the frame of the broken all-gathers below.
template <typename Body>
void allGatherLoops(Channel channel, std::size_t count, std::size_t chunk, Body&& body) {
  const std::size_t loop = static_cast<std::size_t>(channel.count) * chunk;
  for (std::size_t base = 0; base < count; base += loop) {
    const Range part = channelPart(minSize(loop, count - base), channel, 1);
    if (part.size > 0) body(base + part.start, part.size);
  }
}

const Case kAllGather{Collective::AllGather, identity(4), 2, 100, 16, 1, 0};

TEST(CheckerSelfTest, TheUnbrokenScheduleOfEachBrokenOnePasses) {
  EXPECT_EQ(judge(kAllGather, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
              algorithms::ringAllGather(p, ring, channel, kAllGather.count, kAllGather.chunk, 1);
            }),
            std::vector<std::string>{});
}

TEST(CheckerSelfTest, AllGatherSkippingItsLastReceiveIsReported) {
  // One loop: its unreceived messages are left over at the end. (Over
  // several loops the next loop's receives would take them instead, and
  // the checker would report mismatched sizes or elements.)
  const Case c{Collective::AllGather, identity(4), 2, 100, 64, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    const std::size_t self = ring.self();
    allGatherLoops(channel, c.count, c.chunk, [&](std::size_t at, std::size_t len) {
      auto block = [&](int position) { return ring.rankAt(position) * c.count + at; };
      p.copySend(ring.next(), at, self * c.count + at, len);
      for (int j = 1; j < ring.nranks - 1; ++j) p.recvCopySend(ring.prev(), ring.next(), block(ring.pos - j), len);
      // missing: p.recv(ring.prev(), block(ring.pos + 1), len);
    });
  });
  EXPECT_TRUE(reports(errors, "never received"));
}

TEST(CheckerSelfTest, AllGatherSendingTheWrongSizeIsReported) {
  const Case& c = kAllGather;
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    const std::size_t self = ring.self();
    allGatherLoops(channel, c.count, c.chunk, [&](std::size_t at, std::size_t len) {
      auto block = [&](int position) { return ring.rankAt(position) * c.count + at; };
      p.copySend(ring.next(), at, self * c.count + at, len - 1);  // one element short
      for (int j = 1; j < ring.nranks - 1; ++j) p.recvCopySend(ring.prev(), ring.next(), block(ring.pos - j), len);
      p.recv(ring.prev(), block(ring.pos + 1), len);
    });
  });
  EXPECT_TRUE(reports(errors, "size mismatch"));
}

TEST(CheckerSelfTest, AllGatherReceivingBeforeItSendsDeadlocks) {
  const Case& c = kAllGather;
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    const std::size_t self = ring.self();
    allGatherLoops(channel, c.count, c.chunk, [&](std::size_t at, std::size_t len) {
      auto block = [&](int position) { return ring.rankAt(position) * c.count + at; };
      p.recv(ring.prev(), block(ring.pos - 1), len);  // every rank waits for its neighbour
      p.copySend(ring.next(), at, self * c.count + at, len);
    });
  });
  EXPECT_TRUE(reports(errors, "deadlock: rank 0 channel 0 call 0 (recv from 3"));
}

TEST(CheckerSelfTest, ReduceGoingRoundTheRingTwiceAddsTheRootTwice) {
  const Case c{Collective::Reduce, identity(3), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    // The chain starts at the root instead of after it, so the root's
    // input enters at the start and again at the end.
    if (ring.pos == 0) {
      p.send(ring.next(), 0, c.count);
      p.recvReduceCopy(ring.prev(), 0, 0, c.count);
    } else {
      p.recvReduceSend(ring.prev(), ring.next(), 0, c.count);
    }
  });
  EXPECT_TRUE(reports(errors, "adds the contribution of ranks {0} twice"));
}

TEST(CheckerSelfTest, ReduceScatterStartingAtTheWrongBlockIsReported) {
  const Case c{Collective::ReduceScatter, identity(3), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    auto block = [&](int position) { return ring.rankAt(position) * c.count; };
    p.send(ring.next(), block(ring.pos), c.count);  // should be block(ring.pos - 1)
    p.recvReduceSend(ring.prev(), ring.next(), block(ring.pos - 2), c.count);
    p.recvReduceCopy(ring.prev(), ring.self() * c.count, 0, c.count);
  });
  EXPECT_TRUE(reports(errors, "reduces different logical elements"));
}

TEST(CheckerSelfTest, AllReduceWithoutPostIsReported) {
  const Case c{Collective::AllReduce, identity(1), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring&, Channel) {
    p.localCopy(0, 0, c.count);  // should be localReduceCopy: pre() and post() skipped
  });
  EXPECT_TRUE(reports(errors, "holds logical 0.. of ranks {0}, raw; expected logical 0.. of ranks {0}, post()-finalized"));
}

TEST(CheckerSelfTest, ReducingAFinishedReductionIsReported) {
  const Case c{Collective::AllReduce, identity(2), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    if (ring.pos == 0) {
      p.send(ring.next(), 0, c.count);
      p.recvReduceCopy(ring.prev(), 0, 0, c.count);  // should be recv: reduces rank 1's result
    } else {
      p.recvReduceCopySend(ring.prev(), ring.next(), 0, 0, c.count);
    }
  });
  EXPECT_TRUE(reports(errors, "reduces data that is not a pre()-multiplied contribution"));
}

TEST(CheckerSelfTest, BroadcastRootWritingTwiceIsReported) {
  const Case c{Collective::Broadcast, identity(2), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    if (ring.pos == 0) {
      p.copySend(ring.next(), 0, 0, c.count);
      p.localCopy(0, 0, c.count);  // the copy again
    } else {
      p.recv(ring.prev(), 0, c.count);
    }
  });
  EXPECT_TRUE(reports(errors, "rank 0: out[0, 10) written twice"));
}

TEST(CheckerSelfTest, ChannelsThatDoNotSplitTheBufferAreReported) {
  const Case c{Collective::Broadcast, identity(3), 2, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    algorithms::ringBroadcast(p, ring, Channel{0, 1}, 0, c.count, c.chunk, 1);  // ignores `channel`
    (void)channel;
  });
  EXPECT_TRUE(reports(errors, "written twice (channels 0 and 1)"));
}

TEST(CheckerSelfTest, ReduceWritingANonRootOutputIsReported) {
  const Case c{Collective::Reduce, identity(2), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    algorithms::ringReduce(p, ring, channel, 0, c.count, c.chunk, 1);
    if (ring.pos == 1) p.localReduceCopy(0, 0, c.count);  // a non-root's output is not defined
  });
  EXPECT_TRUE(reports(errors, "rank 1: out[0, 10) written by channel 0 but the collective defines no output"));
}

TEST(CheckerSelfTest, FanInInAnOrderOfItsOwnGivesOtherBits) {
  const Case c{Collective::DirectAllReduce, identity(3), 1, 10, 0, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    // Each rank reduces its own input first: all ranks' sums are right,
    // but rounded differently.
    std::vector<int> order = {ring.self()};
    for (int r = 0; r < ring.nranks; ++r)
      if (r != ring.self()) order.push_back(r);
    algorithms::directAllReduce(p, order.data(), ring.nranks, ring.self(), channel, c.count, 1);
  });
  EXPECT_TRUE(reports(errors, "reduce out[0, 10) in different orders"));
}

TEST(CheckerSelfTest, SendingMoreThanTheRingNeedsIsReported) {
  // The direct all-reduce is right, but as a ring all-reduce it sends n(n-1)
  // counts where the ring sends 2(n-1).
  const Case c{Collective::AllReduce, identity(3), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel channel) {
    algorithms::directAllReduce(p, ring.ranks, ring.nranks, ring.self(), channel, c.count, 1);
  });
  EXPECT_TRUE(reports(errors, "the ranks send 60 elements in all where ringAllReduce needs 40"));
}

TEST(CheckerSelfTest, ReadingBeyondTheInputIsReported) {
  const Case c{Collective::Broadcast, identity(2), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    if (ring.pos == 0) p.copySend(ring.next(), 1, 0, c.count);  // in[1, 11)
    else p.recv(ring.prev(), 0, c.count);
  });
  EXPECT_TRUE(reports(errors, "reads in[1, 11) beyond the input of 10 elements"));
}

TEST(CheckerSelfTest, SendingToItselfIsReported) {
  const Case c{Collective::Broadcast, identity(2), 1, 10, 16, 1, 0};
  const auto errors = judge(c, [&](RecordingPrimitives& p, const Ring& ring, Channel) {
    p.send(ring.self(), 0, c.count);
  });
  EXPECT_TRUE(reports(errors, "sends to rank 0 is the caller itself"));
}

// And what a correct exchange looks like to the simulator: the tag follows
// the data from rank 0's input to rank 1's output.
TEST(SimulatorTest, TagsFollowTheData) {
  const Layout layout{2, 1, 16, 16};
  const Outcome outcome = recordAndSimulate(layout, [](RecordingPrimitives& p, int rank, Channel) {
    if (rank == 0) p.send(1, 5, 3);
    else p.recv(0, 2, 3);
  });
  ASSERT_EQ(outcome.errors, std::vector<std::string>{});
  EXPECT_EQ(outcome.steps, 2u);
  ASSERT_EQ(outcome.ranks[1].writes.size(), 1u);
  const Write& w = outcome.ranks[1].writes[0];
  EXPECT_EQ(w.out, 2u);
  EXPECT_EQ(w.size, 3u);
  EXPECT_EQ(w.tag.offset, 5u);  // logical element 5: rank 0's in[5]
  EXPECT_EQ(w.tag.mask, 1u);    // from rank 0 alone
  EXPECT_EQ(w.tag.stage, Stage::Pre);
  ASSERT_EQ(outcome.ranks[0].events.size(), 1u);
  EXPECT_TRUE(outcome.ranks[0].events[0].send);
  EXPECT_EQ(outcome.ranks[0].events[0].peer, 1);
  ASSERT_EQ(outcome.ranks[1].events.size(), 1u);
  EXPECT_FALSE(outcome.ranks[1].events[0].send);
}

// Counts beyond 2^32 cost as little as small ones: one call per loop.
TEST(SimulatorTest, CountsBeyond32BitsStayExact) {
  const std::size_t count = (std::size_t{1} << 32) + 3;
  const Case c{Collective::AllReduce, identity(3), 1, count, std::size_t{1} << 31, 1, 0};
  const Outcome outcome = runCase(c);
  EXPECT_EQ(checkCase(c, outcome), std::vector<std::string>{});
  std::size_t written = 0;
  for (const Write& w : outcome.ranks[2].writes) written += w.size;
  EXPECT_EQ(written, count);
}

}  // namespace
}  // namespace hora::schedule_test
