// OrderedSendCompletions (the ofi backend): a signaled completion that the
// provider gives before those of the writes posted ahead of it is held
// until they have completed, so the protocol never reuses memory a write
// still reads.
#include "transport/rdma/ofi/ordered_send_completions.h"

#include <gtest/gtest.h>

#include <deque>

namespace hora::transport::rdma::ofi {
namespace {

Completion signaled(std::uint64_t id) { return {id, Operation::WriteWithImmediate, Status::Success, 0}; }

TEST(OrderedSendCompletions, InOrderCompletionsPassAtOnce) {
  OrderedSendCompletions order;
  std::deque<Completion> out;
  const std::uint64_t write = order.next(), send = order.next();
  order.completed(write, nullptr, out);
  EXPECT_TRUE(out.empty());
  const Completion mine = signaled(7);
  order.completed(send, &mine, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.front().id, 7u);
}

TEST(OrderedSendCompletions, ASignaledCompletionWaitsForTheWritesBeforeIt) {
  OrderedSendCompletions order;
  std::deque<Completion> out;
  const std::uint64_t firstWrite = order.next(), secondWrite = order.next(), send = order.next();
  const Completion mine = signaled(3);
  order.completed(send, &mine, out);
  EXPECT_TRUE(out.empty()) << "reported while the writes before it still read their sources";
  EXPECT_EQ(order.held(), 1u);
  order.completed(secondWrite, nullptr, out);
  EXPECT_TRUE(out.empty());
  order.completed(firstWrite, nullptr, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.front().id, 3u);
  EXPECT_EQ(order.held(), 0u);
}

TEST(OrderedSendCompletions, HeldCompletionsComeOutInPostingOrder) {
  OrderedSendCompletions order;
  std::deque<Completion> out;
  const std::uint64_t write = order.next(), send1 = order.next(), send2 = order.next();
  const Completion first = signaled(1), second = signaled(2);
  order.completed(send2, &second, out);
  order.completed(send1, &first, out);
  EXPECT_TRUE(out.empty());
  order.completed(write, nullptr, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, 1u);
  EXPECT_EQ(out[1].id, 2u);
}

}  // namespace
}  // namespace hora::transport::rdma::ofi
