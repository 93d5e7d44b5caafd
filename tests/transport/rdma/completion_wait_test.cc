// CompletionWait: the one fd a connection with several queue pairs sleeps
// on. Queue pairs here are stand-ins whose completion fd is an eventfd the
// test makes readable, as a verbs completion channel or a libfabric wait
// fd becomes readable at a completion.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/rdma/completion_wait.h"

namespace hora::transport::rdma {
namespace {

class SignalledQueuePair final : public QueuePair {
 public:
  explicit SignalledQueuePair(bool hasFd = true) : fd_(hasFd ? ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1) {}
  // Shares `other`'s fd, as queue pairs on one completion channel do.
  explicit SignalledQueuePair(const SignalledQueuePair& other, int) : fd_(other.fd_), ownsFd_(false) {}
  ~SignalledQueuePair() override {
    if (ownsFd_ && fd_ >= 0) ::close(fd_);
  }

  void complete() const {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(fd_, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  }
  int armed() const { return armed_; }
  bool armResult = true;

  std::size_t sendQueueDepth() const override { return 16; }
  std::size_t receiveQueueDepth() const override { return 16; }
  Region registerMemory(void*, std::size_t, std::uint64_t, Access) override { return {}; }
  void deregisterMemory(const Region&) override {}
  void postWrite(const Region&, std::size_t, std::size_t, RemoteMemory, std::uint64_t, bool) override {}
  void postWriteWithImmediate(std::uint32_t, std::uint64_t) override {}
  void postReceive(std::uint64_t) override {}
  std::size_t poll(Completion*, std::size_t) override { return 0; }
  int eventFd() const override { return fd_; }
  bool arm() override {
    // As verbs' arm: take the events that woke us, then ask for the next.
    std::uint64_t events = 0;
    while (::read(fd_, &events, sizeof(events)) > 0) {
    }
    ++armed_;
    return armResult;
  }
  std::vector<char> address() const override { return {}; }
  void connect(const std::vector<char>&) override {}

 private:
  int fd_;
  bool ownsFd_ = true;
  int armed_ = 0;
};

SignalledQueuePair& at(const std::vector<std::unique_ptr<QueuePair>>& qps, std::size_t q) {
  return static_cast<SignalledQueuePair&>(*qps[q]);
}

bool readable(pollfd entry) {
  entry.revents = 0;
  return ::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN) != 0;
}

std::vector<std::unique_ptr<QueuePair>> queuePairs(int count) {
  std::vector<std::unique_ptr<QueuePair>> qps;
  for (int q = 0; q < count; ++q) qps.push_back(std::make_unique<SignalledQueuePair>());
  return qps;
}

TEST(CompletionWait, OneQueuePairSleepsOnItsOwnFd) {
  auto qps = queuePairs(1);
  CompletionWait wait(qps);
  EXPECT_EQ(wait.setFd(), -1) << "one queue pair needs no set";
  const pollfd entry = wait.entry(qps);
  EXPECT_EQ(entry.fd, qps[0]->eventFd());
  EXPECT_EQ(at(qps, 0).armed(), 1);
}

// The case this exists for: before it, a connection with several queue
// pairs gave no fd at all, and its waiting rank looked again every 50 us.
TEST(CompletionWait, SeveralQueuePairsShareOneFdThatWakesAtAnyCompletion) {
  auto qps = queuePairs(4);
  CompletionWait wait(qps);
  for (std::size_t q = 0; q < qps.size(); ++q) {
    const pollfd entry = wait.entry(qps);
    ASSERT_GE(entry.fd, 0);
    EXPECT_EQ(entry.fd, wait.setFd());
    EXPECT_FALSE(readable(entry)) << "nothing completed yet";
    at(qps, q).complete();
    EXPECT_TRUE(readable(entry)) << "a completion on queue pair " << q << " must wake the sleeper";
    // The next entry() arms every queue pair again, which takes the event.
    EXPECT_FALSE(readable(wait.entry(qps))) << "arming took queue pair " << q << "'s event";
  }
  for (std::size_t q = 0; q < qps.size(); ++q) EXPECT_EQ(at(qps, q).armed(), 2 * static_cast<int>(qps.size())) << "queue pair " << q;
}

TEST(CompletionWait, AQueuePairThatMayHoldACompletionMeansLookAgain) {
  auto qps = queuePairs(3);
  CompletionWait wait(qps);
  at(qps, 2).armResult = false;
  EXPECT_EQ(wait.entry(qps).fd, -1);
  at(qps, 2).armResult = true;
  EXPECT_GE(wait.entry(qps).fd, 0);
}

TEST(CompletionWait, AQueuePairWithoutAnFdMeansLookAgain) {
  std::vector<std::unique_ptr<QueuePair>> qps;
  qps.push_back(std::make_unique<SignalledQueuePair>());
  qps.push_back(std::make_unique<SignalledQueuePair>(/*hasFd=*/false));
  CompletionWait wait(qps);
  EXPECT_EQ(wait.setFd(), -1);
  EXPECT_EQ(wait.entry(qps).fd, -1);
}

TEST(CompletionWait, QueuePairsOnOneCompletionChannelAreWatchedOnce) {
  std::vector<std::unique_ptr<QueuePair>> qps;
  auto first = std::make_unique<SignalledQueuePair>();
  auto second = std::make_unique<SignalledQueuePair>(*first, 0);
  qps.push_back(std::move(first));
  qps.push_back(std::move(second));
  CompletionWait wait(qps);  // adding the same fd twice must not fail
  const pollfd entry = wait.entry(qps);
  ASSERT_GE(entry.fd, 0);
  at(qps, 1).complete();
  EXPECT_TRUE(readable(entry));
}

TEST(CompletionWait, MovingHandsTheSetOver) {
  auto qps = queuePairs(2);
  CompletionWait wait(qps);
  const int set = wait.setFd();
  ASSERT_GE(set, 0);
  CompletionWait moved(std::move(wait));
  EXPECT_EQ(moved.setFd(), set);
  EXPECT_EQ(wait.setFd(), -1);  // NOLINT(bugprone-use-after-move): the moved-from state is part of the contract
  CompletionWait assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.setFd(), set);
}

}  // namespace
}  // namespace hora::transport::rdma
