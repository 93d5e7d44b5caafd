// StampQueue: a connection's stamps in stream order. The oldest lives in
// the queue object and the rest in reused storage, so these check that
// order, front(), back() and frontFrom() stay right across that seam: one
// stamp at a time (a collective), many (a group of messages to one peer),
// pushes between pops, and reuse after emptying.
#include "transport/stamp_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

namespace hora::transport::testing {
namespace {

struct Item {
  std::uint64_t from = 0;
  int tag = 0;
  bool alone = false;
};

// Checks the oldest and newest against the reference model, then pops one
// from each.
void expectAndPopFront(StampQueue<Item>& queue, std::deque<Item>& model) {
  ASSERT_FALSE(queue.empty());
  ASSERT_EQ(queue.size(), model.size());
  EXPECT_EQ(queue.frontFrom(), model.front().from);
  EXPECT_EQ(queue.front().tag, model.front().tag);
  EXPECT_EQ(queue.back().tag, model.back().tag);
  queue.pop_front();
  model.pop_front();
}

// Pops everything, checking it against the reference model.
void expectSame(StampQueue<Item>& queue, std::deque<Item>& model) {
  while (!model.empty()) expectAndPopFront(queue, model);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.frontFrom(), StampQueue<Item>::kNone);
}

TEST(StampQueue, StartsEmpty) {
  StampQueue<Item> queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.frontFrom(), StampQueue<Item>::kNone);
}

TEST(StampQueue, OneAtATimeAsACollectiveUsesIt) {
  StampQueue<Item> queue;
  for (int op = 0; op < 100; ++op) {
    queue.push_back({static_cast<std::uint64_t>(op) * 8, op});
    ASSERT_EQ(queue.size(), 1u);
    EXPECT_EQ(queue.frontFrom(), static_cast<std::uint64_t>(op) * 8);
    EXPECT_EQ(&queue.front(), &queue.back());
    EXPECT_EQ(queue.front().tag, op);
    queue.pop_front();
    EXPECT_TRUE(queue.empty());
  }
}

TEST(StampQueue, KeepsStreamOrderAcrossManyAndInterleavedPushes) {
  StampQueue<Item> queue;
  std::deque<Item> model;
  int tag = 0;
  std::uint64_t from = 0;
  auto push = [&] {
    const Item item{from += 3, ++tag};
    queue.push_back(item);
    model.push_back(item);
  };
  // Many messages to one peer in one group: more than the reused
  // storage compacts after (64).
  for (int i = 0; i < 200; ++i) push();
  // Pops interleaved with pushes, so the oldest moves in from storage
  // while newer ones arrive.
  for (int round = 0; round < 300; ++round) {
    if (round % 3 != 2) push();
    expectAndPopFront(queue, model);
  }
  expectSame(queue, model);
  // Used again after emptying.
  for (int i = 0; i < 5; ++i) push();
  expectSame(queue, model);
}

TEST(StampQueue, BackIsTheNewestAndWritable) {
  // A sender marks its newest stamp "alone" through back(), whether that
  // stamp is the oldest one or waits behind others.
  StampQueue<Item> queue;
  queue.push_back({1, 1});
  queue.back().alone = true;
  EXPECT_TRUE(queue.front().alone);
  queue.push_back({2, 2});
  queue.back().alone = true;
  queue.pop_front();
  EXPECT_EQ(queue.front().tag, 2);
  EXPECT_TRUE(queue.front().alone);
  EXPECT_EQ(queue.frontFrom(), 2u);
}

}  // namespace
}  // namespace hora::transport::testing
