// PostedQueue: the posted buffers of one connection and the counters the
// executor waits on. Checked with a recording move function: drain() must
// offer each piece's unmoved rest, in order, stop where the move function
// moves nothing and before an in-place piece (those move only through
// advance()), and posted/completed must count every byte exactly once.
#include "transport/posted_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hora::transport::testing {
namespace {

struct MoveCall {
  const char* data;
  std::size_t bytes;
  bool operator==(const MoveCall&) const = default;
};
void PrintTo(const MoveCall& call, std::ostream* out) {
  *out << "{" << static_cast<const void*>(call.data) << ", " << call.bytes << " bytes}";
}

// No test here needs more calls than this; a drain() that keeps calling
// fails instead of looping forever.
constexpr std::size_t kMaxMoveCalls = 1000;

// A move function that takes up to `limit` bytes a call and remembers what
// it was offered.
struct RecordingMove {
  explicit RecordingMove(std::size_t limit = SIZE_MAX) : limit(limit) {}
  std::size_t limit;
  std::vector<MoveCall> calls;
  std::size_t operator()(const char* data, std::size_t bytes) {
    if (calls.size() == kMaxMoveCalls) throw std::runtime_error("drain() does not stop calling");
    calls.push_back({data, bytes});
    return std::min(bytes, limit);
  }
};

TEST(PostedQueueTest, StartsEmpty) {
  PostedQueue<const char*> queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(queue.frontInPlace());
  EXPECT_EQ(queue.posted(), 0u);
  EXPECT_EQ(queue.completed(), 0u);
  RecordingMove move;
  EXPECT_FALSE(queue.drain(move));
  EXPECT_TRUE(move.calls.empty()) << "nothing to offer";
}

TEST(PostedQueueTest, ZeroBytePostsAreIgnored) {
  PostedQueue<const char*> queue;
  const char data[4] = {};
  queue.post(data, 0);
  queue.postInPlace(0);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.posted(), 0u);
  // Between real pieces, too: the empty one never reaches the move function.
  queue.post(data, 2);
  queue.post(data + 2, 0);
  queue.post(data + 2, 2);
  RecordingMove move;
  EXPECT_TRUE(queue.drain(move));
  EXPECT_EQ(move.calls, (std::vector<MoveCall>{{data, 2}, {data + 2, 2}}));
  EXPECT_EQ(queue.posted(), 4u);
  EXPECT_EQ(queue.completed(), 4u);
}

TEST(PostedQueueTest, DrainOffersUnmovedRestsInOrder) {
  PostedQueue<const char*> queue;
  const char first[10] = {}, second[7] = {};
  queue.post(first, 10);
  queue.post(second, 7);
  EXPECT_EQ(queue.posted(), 17u);

  RecordingMove move(4);
  // 4 bytes a call: the move function sees each piece's rest shrink.
  EXPECT_TRUE(queue.drain(move));
  EXPECT_EQ(move.calls,
            (std::vector<MoveCall>{
                {first, 10}, {first + 4, 6}, {first + 8, 2}, {second, 7}, {second + 4, 3}}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.completed(), 17u);
}

TEST(PostedQueueTest, DrainStopsWhenNothingMoves) {
  PostedQueue<const char*> queue;
  const char data[10] = {};
  queue.post(data, 10);
  RecordingMove stuck(0);
  EXPECT_FALSE(queue.drain(stuck)) << "nothing moved";
  EXPECT_EQ(stuck.calls.size(), 1u) << "one refusal ends the drain";
  EXPECT_EQ(queue.completed(), 0u);
  EXPECT_EQ(queue.frontData(), data);
  EXPECT_EQ(queue.frontBytes(), 10u);

  // A move function that takes 3 bytes once, then nothing.
  std::size_t calls = 0;
  EXPECT_TRUE(queue.drain([&](const char*, std::size_t) -> std::size_t {
    if (calls == kMaxMoveCalls) throw std::runtime_error("drain() does not stop calling");
    return calls++ == 0 ? 3 : 0;
  }));
  EXPECT_EQ(calls, 2u);
  EXPECT_EQ(queue.completed(), 3u);
  EXPECT_EQ(queue.frontData(), data + 3);
  EXPECT_EQ(queue.frontBytes(), 7u);
}

TEST(PostedQueueTest, DrainStopsAtAnInPlacePiece) {
  PostedQueue<const char*> queue;
  const char before[10] = {}, after[7] = {};
  queue.post(before, 10);
  queue.postInPlace(5);
  queue.post(after, 7);
  EXPECT_EQ(queue.posted(), 22u);

  RecordingMove move;
  EXPECT_TRUE(queue.drain(move));
  EXPECT_EQ(move.calls, (std::vector<MoveCall>{{before, 10}}));
  EXPECT_TRUE(queue.frontInPlace());
  EXPECT_EQ(queue.frontBytes(), 5u);
  EXPECT_EQ(queue.completed(), 10u);

  // The in-place piece blocks the queue until the caller reports its bytes.
  EXPECT_FALSE(queue.drain(move));
  EXPECT_EQ(move.calls.size(), 1u);
  queue.advance(3);
  EXPECT_TRUE(queue.frontInPlace());
  EXPECT_EQ(queue.frontBytes(), 2u);
  EXPECT_EQ(queue.completed(), 13u);
  queue.advance(2);
  EXPECT_FALSE(queue.frontInPlace());
  EXPECT_EQ(queue.frontData(), after);
  EXPECT_EQ(queue.completed(), 15u);

  EXPECT_TRUE(queue.drain(move));
  EXPECT_EQ(move.calls.back(), (MoveCall{after, 7}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.completed(), queue.posted());
}

TEST(PostedQueueTest, AdvanceMovesThePointerOfACopiedPiece) {
  PostedQueue<const char*> queue;
  const char data[8] = {};
  queue.post(data, 8);
  queue.advance(5);
  EXPECT_EQ(queue.frontData(), data + 5);
  EXPECT_EQ(queue.frontBytes(), 3u);
  EXPECT_EQ(queue.completed(), 5u);
  queue.advance(3);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.completed(), 8u);
}

TEST(PostedQueueTest, CountMovedCountsBothWithoutQueueing) {
  PostedQueue<const char*> queue;
  const char data[4] = {};
  queue.post(data, 4);
  queue.countMoved(100);
  EXPECT_EQ(queue.posted(), 104u);
  EXPECT_EQ(queue.completed(), 100u);
  EXPECT_EQ(queue.frontData(), data) << "the queued piece is untouched";
  EXPECT_EQ(queue.frontBytes(), 4u);
  queue.advance(4);
  EXPECT_TRUE(queue.empty());
  queue.countMoved(7);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.posted(), 111u);
  EXPECT_EQ(queue.completed(), 111u);
}

// The receive side: the move function writes into the posted buffers.
TEST(PostedQueueTest, ReceiveQueueFillsBuffersInOrder) {
  PostedQueue<char*> queue;
  char first[5] = {}, second[9] = {};
  queue.post(first, sizeof(first));
  queue.post(second, sizeof(second));
  const char incoming[] = "abcdefghijklmn";  // 14 bytes, arriving 3 at a time
  std::size_t delivered = 0;
  auto receive = [&](char* data, std::size_t bytes) {
    const std::size_t n = std::min({bytes, std::size_t{3}, sizeof(incoming) - 1 - delivered});
    std::memcpy(data, incoming + delivered, n);
    delivered += n;
    return n;
  };
  EXPECT_TRUE(queue.drain(receive));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(std::string(first, sizeof(first)), "abcde");
  EXPECT_EQ(std::string(second, sizeof(second)), "fghijklmn");
  EXPECT_EQ(queue.completed(), 14u);
}

}  // namespace
}  // namespace hora::transport::testing
