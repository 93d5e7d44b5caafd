// The shared-memory segment's layout: slot geometry from the FIFO size, and
// where the header and the two FIFOs lie. What the executor's deadlock
// argument (core/communicator.cc) needs of the geometry is checked here: an
// even number of power-of-two slots, half of which hold half the FIFO.
#include "transport/shm/shm_layout.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "protocols/fifo_handle.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport::testing {
namespace {

bool isPowerOfTwo(std::uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

TEST(ShmLayoutTest, DefaultFifoHasSlotsOf64KiB) {
  const ShmGeometry geometry = shmGeometry(4 << 20, 128 << 10);
  EXPECT_EQ(geometry.slotBytes, 64u << 10);
  EXPECT_EQ(geometry.slotCount, 64u);
}

TEST(ShmLayoutTest, SlotsAreNoLargerThanTheSlice) {
  EXPECT_EQ(shmGeometry(4 << 20, 1 << 10).slotBytes, 1u << 10);
  EXPECT_EQ(shmGeometry(4 << 20, 12 << 10).slotBytes, 8u << 10);
  EXPECT_EQ(shmGeometry(4 << 20, 64).slotBytes, 64u);
  EXPECT_EQ(shmGeometry(4 << 20, 512 << 10).slotBytes, 64u << 10);
}

TEST(ShmLayoutTest, GeometryKeepsWhatTheDeadlockArgumentNeeds) {
  for (std::size_t fifo : {std::size_t{4096}, std::size_t{5000}, std::size_t{64 << 10},
                           std::size_t{100000}, std::size_t{1 << 20}, std::size_t{3 << 20},
                           std::size_t{4 << 20}, std::size_t{(4 << 20) + 1}, std::size_t{64 << 20}}) {
    SCOPED_TRACE(::testing::Message() << "a FIFO of " << fifo << " bytes");
    const ShmGeometry g = shmGeometry(fifo, 128 << 10);
    EXPECT_TRUE(isPowerOfTwo(g.slotBytes));
    EXPECT_GE(g.slotBytes, 512u);
    EXPECT_LE(g.slotBytes, 64u << 10);
    EXPECT_EQ(g.slotCount % 2, 0u);
    EXPECT_GE(g.slotCount / 2 * g.slotBytes, fifo / 2) << "half the slots hold half the FIFO";
    EXPECT_LE(g.slotCount * g.slotBytes, fifo + 2 * g.slotBytes) << "not much more than asked";
    EXPECT_GE(g.slotCount, 8u) << "enough slots to pipeline";
    EXPECT_EQ((128u << 10) % g.slotBytes, 0u) << "the default slice is whole slots";
  }
}

TEST(ShmLayoutTest, PartsLieInOrderOnPageBoundariesWithinTheSegment) {
  const std::size_t page = ShmSegment::pageBytes();
  const ShmGeometry g = shmGeometry(64 << 10, 128 << 10);
  const ShmSegmentLayout layout = shmSegmentLayout(g, page);
  EXPECT_GE(layout.simpleOffset, sizeof(ShmSegmentHeader));
  EXPECT_EQ(layout.simpleOffset % page, 0u);
  EXPECT_GE(layout.llOffset, layout.simpleOffset + protocols::fifoLayout(g.slotBytes, g.slotCount).totalBytes);
  EXPECT_EQ(layout.llOffset % page, 0u);
  EXPECT_GE(layout.totalBytes, layout.llOffset + protocols::fifoLayout(g.llSlotBytes, g.llSlotCount).totalBytes);
  EXPECT_EQ(layout.totalBytes % page, 0u);
}

TEST(ShmLayoutTest, HandlesPointIntoTheirOwnPartsOfOneMapping) {
  const std::size_t page = ShmSegment::pageBytes();
  const ShmGeometry g = shmGeometry(64 << 10, 128 << 10);
  const ShmSegmentLayout layout = shmSegmentLayout(g, page);
  ShmSegment segment = ShmSegment::create(layout.totalBytes);
  char* base = static_cast<char*>(segment.data());
  const protocols::FifoHandle simple = simpleFifoAt(base, g, page);
  const protocols::FifoHandle ll = llFifoAt(base, g, page);
  EXPECT_EQ(reinterpret_cast<char*>(simple.head), base + layout.simpleOffset);
  EXPECT_EQ(simple.slotBytes, g.slotBytes);
  EXPECT_EQ(simple.slotCount, g.slotCount);
  EXPECT_LE(simple.slots + simple.slotBytes * simple.slotCount, base + layout.llOffset);
  EXPECT_EQ(reinterpret_cast<char*>(ll.head), base + layout.llOffset);
  EXPECT_EQ(ll.slotBytes, g.llSlotBytes);
  EXPECT_LE(ll.slots + ll.slotBytes * ll.slotCount, base + layout.totalBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(simple.slots) % protocols::kSlotsAlignment, 0u);
  // The header's counter the receiver writes has a cache line of its own.
  EXPECT_EQ(offsetof(ShmSegmentHeader, taken) % protocols::kCacheLineBytes, 0u);
}

}  // namespace
}  // namespace hora::transport::testing
