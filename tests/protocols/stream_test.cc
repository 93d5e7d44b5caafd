// Both protocols (host ordering) streaming messages of every awkward size
// through a FIFO of five 64-byte slots, so that the ring wraps thousands of
// times and every message larger than a slot (or, for LL, than the ring)
// must be cut into pieces: between two threads, then between two processes,
// each with its own mapping of a memfd at its own address. The receiver
// checks every size and every byte (harness.h).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "harness.h"

namespace hora::protocols::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kSlotBytes = 64;
constexpr std::uint64_t kSlots = 5;  // not a power of two: slot indexes wrap by hand
constexpr std::size_t kLarge = 2053;  // many slots, and LL's whole ring several times over

template <class P>
class Stream : public ::testing::Test {};
TYPED_TEST_SUITE(Stream, HostProtocols, ProtocolNames);

TYPED_TEST(Stream, BetweenTwoThreads) {
  OwnedFifo fifo(kSlotBytes, kSlots);
  const std::vector<std::size_t> sizes = messageSizes(3000, kSlotBytes, kLarge);
  const std::uint64_t deadline = HostOrdering::deadlineAfter(30s);
  Status sent = Status::Ok;
  std::thread sender([&] { sent = sendAll<TypeParam>(fifo.handle(), sizes, deadline); });
  const std::string problem = receiveAll<TypeParam>(fifo.handle(), sizes, deadline);
  if (!problem.empty()) raiseAbort(fifo.handle());  // let the sender go
  sender.join();
  EXPECT_EQ(problem, "");
  EXPECT_EQ(sent, Status::Ok) << statusName(sent);
}

// The same stream through one page of a memfd that each process maps for
// itself. The child is the sender, or the receiver that exits 0 only if every
// byte was right.
class SharedBlock {
 public:
  SharedBlock() {
    bytes_ = roundUpTo(fifoLayout(kSlotBytes, kSlots).totalBytes, 4096);
    fd_ = ::memfd_create("hora-protocols-test", MFD_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) fail(ErrorKind::System, "memfd");
    mapping_ = map();
  }
  ~SharedBlock() {
    ::munmap(mapping_, bytes_);
    ::close(fd_);
  }
  void* map() const {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) fail(ErrorKind::System, "mmap");
    return p;
  }
  void* mapping() const { return mapping_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  int fd_ = -1;
  void* mapping_ = nullptr;
};

enum class ChildRole { Sender, Receiver };

template <class P>
void streamBetweenProcesses(ChildRole role) {
  SharedBlock block;
  const FifoHandle fifo = initFifo(block.mapping(), block.bytes(), kSlotBytes, kSlots);
  const std::vector<std::size_t> sizes = messageSizes(2000, kSlotBytes, kLarge);
  const std::uint64_t deadline = HostOrdering::deadlineAfter(30s);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A mapping of its own, at an address of its own: only offsets agree.
    void* mine = block.map();
    if (mine == block.mapping()) ::_exit(3);
    const FifoHandle view = fifoAt(mine, kSlotBytes, kSlots);
    const bool ok = role == ChildRole::Sender ? sendAll<P>(view, sizes, deadline) == Status::Ok
                                              : receiveAll<P>(view, sizes, deadline).empty();
    if (!ok) raiseAbort(view);  // let the parent go
    ::_exit(ok ? 0 : 1);
  }
  std::string problem;
  if (role == ChildRole::Sender) {
    problem = receiveAll<P>(fifo, sizes, deadline);
  } else {
    const Status sent = sendAll<P>(fifo, sizes, deadline);
    if (sent != Status::Ok) problem = strCat("sending: ", statusName(sent));
  }
  if (!problem.empty()) raiseAbort(fifo);  // let the child go
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  EXPECT_EQ(problem, "");
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << (role == ChildRole::Sender ? "child sender" : "child receiver");
}

TYPED_TEST(Stream, FromAChildProcess) { streamBetweenProcesses<TypeParam>(ChildRole::Sender); }
TYPED_TEST(Stream, ToAChildProcess) { streamBetweenProcesses<TypeParam>(ChildRole::Receiver); }

// A sender or receiver object built on a FIFO already in use resumes where
// the last one of its side stopped (the FIFO holds each side's position),
// as a kernel launched per operation will.
TYPED_TEST(Stream, NewObjectsResumeTheStream) {
  OwnedFifo fifo(kSlotBytes, kSlots);
  std::vector<char> buffer(64);
  std::size_t bytes = 0;
  for (std::uint64_t m = 0; m < 20; ++m) {
    const std::vector<char> data = messageBytes(m, m % 9);
    ASSERT_EQ(typename TypeParam::Sender(fifo.handle()).send(data.data(), data.size(), kNoDeadline), Status::Ok);
    ASSERT_EQ(typename TypeParam::Receiver(fifo.handle()).recv(buffer.data(), buffer.size(), &bytes, kNoDeadline),
              Status::Ok);
    ASSERT_EQ(bytes, data.size());
    ASSERT_TRUE(std::equal(data.begin(), data.end(), buffer.begin())) << "message " << m;
  }
}

// A message larger than the receiver's buffer is consumed whole: the caller
// learns its size, gets what fits, and the next message arrives intact.
TYPED_TEST(Stream, OverflowDropsTheExcessAndKeepsTheStream) {
  OwnedFifo fifo(kSlotBytes, kSlots);
  typename TypeParam::Sender sender(fifo.handle());
  typename TypeParam::Receiver receiver(fifo.handle());
  const std::vector<char> big = messageBytes(0, 150);
  const std::vector<char> next = messageBytes(1, 5);
  std::thread producer([&] {
    EXPECT_EQ(sender.send(big.data(), big.size(), HostOrdering::deadlineAfter(10s)), Status::Ok);
    EXPECT_EQ(sender.send(next.data(), next.size(), HostOrdering::deadlineAfter(10s)), Status::Ok);
  });
  std::vector<char> buffer(11, 'z');
  std::size_t bytes = 0;
  EXPECT_EQ(receiver.recv(buffer.data(), 10, &bytes, HostOrdering::deadlineAfter(10s)), Status::Overflow);
  EXPECT_EQ(bytes, 150u);
  EXPECT_EQ(std::memcmp(buffer.data(), big.data(), 10), 0);
  EXPECT_EQ(buffer[10], 'z');
  EXPECT_EQ(receiver.recv(buffer.data(), buffer.size(), &bytes, HostOrdering::deadlineAfter(10s)), Status::Ok);
  EXPECT_EQ(bytes, 5u);
  EXPECT_EQ(std::memcmp(buffer.data(), next.data(), 5), 0);
  producer.join();
}

}  // namespace
}  // namespace hora::protocols::testing
