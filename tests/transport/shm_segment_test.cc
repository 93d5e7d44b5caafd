// ShmSegment: a memfd mapped so that its ring part appears twice, back to
// back. The FIFO relies on that alias to hand out runs that wrap around the
// ring as one contiguous range, so every byte written through one view must
// be seen through the other, at the ring's first and last bytes too. A peer
// opens the segment through /proc/<pid>/fd/<fd>; here the peer is this
// process itself, which maps the same memory a second time.
#include "transport/shm/shm_segment.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "hora/communicator.h"

namespace hora::transport::testing {
namespace {

const std::size_t kPage = ShmSegment::pageBytes();

char* bytesOf(const ShmSegment& segment) { return static_cast<char*>(segment.data()); }

// Offsets into a ring of `ringBytes` worth checking: both ends, a page
// boundary inside, and a byte in the middle.
std::vector<std::size_t> probeOffsets(std::size_t ringBytes) {
  std::vector<std::size_t> offsets = {0, 1, ringBytes / 2 + 3, ringBytes - 1};
  if (ringBytes > kPage) offsets.insert(offsets.end(), {kPage - 1, kPage});
  return offsets;
}

// Writes through each view of the ring and reads through the other.
void expectRingAliased(const ShmSegment& segment, std::size_t ringOffset) {
  char* ring = bytesOf(segment) + ringOffset;
  char* alias = bytesOf(segment) + segment.size();
  const std::size_t ringBytes = segment.size() - ringOffset;
  char value = 1;
  for (std::size_t i : probeOffsets(ringBytes)) {
    ring[i] = ++value;
    EXPECT_EQ(alias[i], value) << "ring byte " << i << " written, alias not updated";
    alias[i] = ++value;
    EXPECT_EQ(ring[i], value) << "alias byte " << i << " written, ring not updated";
  }
}

TEST(ShmSegmentTest, CreateGivesZeroFilledSegmentOfTheAskedSize) {
  ShmSegment segment = ShmSegment::create(4 * kPage, kPage);
  ASSERT_NE(segment.data(), nullptr);
  EXPECT_EQ(segment.size(), 4 * kPage);
  EXPECT_GE(segment.fd(), 0);
  // The whole mapping, the ring's second view included, reads as zeros.
  const char* bytes = bytesOf(segment);
  std::size_t nonZero = 0;
  for (std::size_t i = 0; i < segment.size() + 3 * kPage; ++i) nonZero += bytes[i] != 0;
  EXPECT_EQ(nonZero, 0u);
}

TEST(ShmSegmentTest, RingIsMappedTwiceBackToBack) {
  for (std::size_t pages : {2, 3, 8}) {
    SCOPED_TRACE(::testing::Message() << pages << " pages, ring from page 1");
    ShmSegment segment = ShmSegment::create(pages * kPage, kPage);
    expectRingAliased(segment, kPage);
  }
}

TEST(ShmSegmentTest, WholeSegmentMayBeTheRing) {
  ShmSegment segment = ShmSegment::create(2 * kPage, 0);
  expectRingAliased(segment, 0);
}

TEST(ShmSegmentTest, BytesBeforeTheRingAreNotAliased) {
  ShmSegment segment = ShmSegment::create(3 * kPage, kPage);
  char* bytes = bytesOf(segment);
  bytes[0] = 'h';
  bytes[kPage - 1] = 't';
  // The alias starts with the ring's first byte, not the segment's.
  EXPECT_EQ(bytes[segment.size()], 0);
  bytes[kPage] = 'r';
  EXPECT_EQ(bytes[segment.size()], 'r');
  EXPECT_EQ(bytes[0], 'h');
  EXPECT_EQ(bytes[kPage - 1], 't');
}

TEST(ShmSegmentTest, SizesThatAreNotWholePagesAreRejected) {
  EXPECT_THROW(ShmSegment::create(kPage + 1, 0), Error);
  EXPECT_THROW(ShmSegment::create(2 * kPage - 64, kPage), Error);
  EXPECT_THROW(ShmSegment::create(2 * kPage, 1), Error);
  EXPECT_THROW(ShmSegment::create(2 * kPage, kPage + 64), Error);
  // A ring needs at least one byte: it cannot start at the segment's end.
  EXPECT_THROW(ShmSegment::create(2 * kPage, 2 * kPage), Error);
  EXPECT_THROW(ShmSegment::create(2 * kPage, 3 * kPage), Error);
}

TEST(ShmSegmentTest, OpenPeerMapsTheSameMemory) {
  const std::size_t bytes = 3 * kPage;
  ShmSegment owner = ShmSegment::create(bytes, kPage);
  ShmSegment peer = ShmSegment::openPeer(::getpid(), owner.fd(), owner.identity(), bytes, kPage);
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
  // The peer's ring is double-mapped too, over the same memory.
  expectRingAliased(peer, kPage);
  peerBytes[bytes + 5] = 'x';
  EXPECT_EQ(ownerBytes[kPage + 5], 'x');
}

TEST(ShmSegmentTest, PeerMappingOutlivesTheOwner) {
  const std::size_t bytes = 2 * kPage;
  ShmSegment peer;
  {
    ShmSegment owner = ShmSegment::create(bytes, kPage);
    peer = ShmSegment::openPeer(::getpid(), owner.fd(), owner.identity(), bytes, kPage);
    bytesOf(owner)[kPage + 7] = 'k';
  }
  EXPECT_EQ(bytesOf(peer)[kPage + 7], 'k');
  EXPECT_EQ(bytesOf(peer)[bytes + 7], 'k');
}

TEST(ShmSegmentTest, OpenPeerOfAClosedDescriptorNamesTheProcPath) {
  // A descriptor number that is certainly not open: one just closed.
  int unused = ::dup(STDERR_FILENO);
  ASSERT_GE(unused, 0);
  ::close(unused);
  const std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(unused);
  try {
    ShmSegment::openPeer(::getpid(), unused, FileIdentity{}, 2 * kPage, kPage);
    FAIL() << "opening " << path << " should have failed";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::System);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

TEST(ShmSegmentTest, OpenPeerOfAnotherFileIsRefused) {
  ShmSegment owner = ShmSegment::create(2 * kPage, kPage);
  FileIdentity other = owner.identity();
  other.inode += 1;  // as if the pid named another process's descriptor
  try {
    ShmSegment::openPeer(::getpid(), owner.fd(), other, 2 * kPage, kPage);
    FAIL() << "mapped a file that is not the one named";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::System);
    EXPECT_NE(std::string(error.what()).find("not the peer's shared memory"), std::string::npos)
        << error.what();
  }
}

TEST(ShmSegmentTest, CloseDescriptorKeepsTheMapping) {
  ShmSegment segment = ShmSegment::create(2 * kPage, kPage);
  bytesOf(segment)[kPage] = 'm';
  segment.closeDescriptor();
  EXPECT_EQ(segment.fd(), -1);
  EXPECT_EQ(bytesOf(segment)[segment.size()], 'm');
  segment.closeDescriptor();  // a second close is harmless
  EXPECT_EQ(segment.fd(), -1);
}

TEST(ShmSegmentTest, MoveHandsOverTheMapping) {
  ShmSegment first = ShmSegment::create(2 * kPage, kPage);
  void* data = first.data();
  const int fd = first.fd();
  ShmSegment second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(first.fd(), -1);
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(second.fd(), fd);

  ShmSegment third = ShmSegment::create(2 * kPage, 0);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
  EXPECT_EQ(third.size(), 2 * kPage);
  expectRingAliased(third, kPage);
}

}  // namespace
}  // namespace hora::transport::testing
