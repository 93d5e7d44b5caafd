// ShmSegment: a memfd mapped once by each side. A peer opens the segment
// through /proc/<pid>/fd/<fd>; here the peer is this process itself, which
// maps the same memory a second time, at another address.
#include "transport/shm/shm_segment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hora/communicator.h"

namespace hora::transport::testing {
namespace {

const std::size_t kPage = ShmSegment::pageBytes();

char* bytesOf(const ShmSegment& segment) { return static_cast<char*>(segment.data()); }

TEST(ShmSegmentTest, CreateGivesZeroFilledSegmentOfTheAskedSize) {
  ShmSegment segment = ShmSegment::create(4 * kPage);
  ASSERT_NE(segment.data(), nullptr);
  EXPECT_EQ(segment.size(), 4 * kPage);
  EXPECT_GE(segment.fd(), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(segment.data()) % kPage, 0u) << "page-aligned";
  const char* bytes = bytesOf(segment);
  std::size_t nonZero = 0;
  for (std::size_t i = 0; i < segment.size(); ++i) nonZero += bytes[i] != 0;
  EXPECT_EQ(nonZero, 0u);
}

TEST(ShmSegmentTest, SizesThatAreNotWholePagesAreRejected) {
  EXPECT_THROW(ShmSegment::create(kPage + 1), Error);
  EXPECT_THROW(ShmSegment::create(2 * kPage - 64), Error);
  EXPECT_THROW(ShmSegment::create(0), Error);
}

TEST(ShmSegmentTest, OpenPeerMapsTheSameMemory) {
  const std::size_t bytes = 3 * kPage;
  ShmSegment owner = ShmSegment::create(bytes);
  ShmSegment peer = ShmSegment::openPeer(::getpid(), owner.fd(), owner.identity(), bytes, "");
  ASSERT_NE(peer.data(), nullptr);
  EXPECT_NE(peer.data(), owner.data()) << "the peer should have a mapping of its own";
  EXPECT_EQ(peer.size(), bytes);
  EXPECT_EQ(peer.fd(), -1) << "the peer needs no descriptor once mapped";

  char* ownerBytes = bytesOf(owner);
  char* peerBytes = bytesOf(peer);
  for (std::size_t i : {std::size_t{0}, kPage - 1, kPage, bytes - 1}) {
    ownerBytes[i] = static_cast<char>(i % 251 + 1);
    EXPECT_EQ(peerBytes[i], static_cast<char>(i % 251 + 1)) << "owner wrote byte " << i;
    peerBytes[i] = static_cast<char>(i % 241 + 2);
    EXPECT_EQ(ownerBytes[i], static_cast<char>(i % 241 + 2)) << "peer wrote byte " << i;
  }
}

TEST(ShmSegmentTest, PeerMappingOutlivesTheOwner) {
  const std::size_t bytes = 2 * kPage;
  ShmSegment peer;
  {
    ShmSegment owner = ShmSegment::create(bytes);
    peer = ShmSegment::openPeer(::getpid(), owner.fd(), owner.identity(), bytes, "");
    bytesOf(owner)[kPage + 7] = 'k';
  }
  EXPECT_EQ(bytesOf(peer)[kPage + 7], 'k');
}

// A descriptor the peer has closed (it stopped or exited before this rank
// opened its memory) is the peer's failure: Remote, naming the path.
TEST(ShmSegmentTest, OpenPeerOfAClosedDescriptorNamesTheProcPath) {
  // A descriptor number that is certainly not open: one just closed.
  int unused = ::dup(STDERR_FILENO);
  ASSERT_GE(unused, 0);
  ::close(unused);
  const std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(unused);
  try {
    ShmSegment::openPeer(::getpid(), unused, FileIdentity{}, 2 * kPage, "");
    FAIL() << "opening " << path << " should have failed";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Remote);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

TEST(ShmSegmentTest, OpenPeerOfAnotherFileIsRefused) {
  ShmSegment owner = ShmSegment::create(2 * kPage);
  FileIdentity other = owner.identity();
  other.inode += 1;  // as if the pid named another process's descriptor
  try {
    ShmSegment::openPeer(::getpid(), owner.fd(), other, 2 * kPage, "; do this instead");
    FAIL() << "mapped a file that is not the one named";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::System);
    EXPECT_NE(std::string(error.what()).find("not the peer's shared memory"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("; do this instead"), std::string::npos) << error.what();
  }
}

TEST(ShmSegmentTest, CloseDescriptorKeepsTheMapping) {
  ShmSegment segment = ShmSegment::create(2 * kPage);
  bytesOf(segment)[kPage] = 'm';
  segment.closeDescriptor();
  EXPECT_EQ(segment.fd(), -1);
  EXPECT_EQ(bytesOf(segment)[kPage], 'm');
  segment.closeDescriptor();  // a second close is harmless
  EXPECT_EQ(segment.fd(), -1);
}

TEST(ShmSegmentTest, MoveHandsOverTheMapping) {
  ShmSegment first = ShmSegment::create(2 * kPage);
  void* data = first.data();
  const int fd = first.fd();
  ShmSegment second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(first.fd(), -1);
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(second.fd(), fd);

  ShmSegment third = ShmSegment::create(3 * kPage);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
  EXPECT_EQ(third.size(), 2 * kPage);
}

}  // namespace
}  // namespace hora::transport::testing
