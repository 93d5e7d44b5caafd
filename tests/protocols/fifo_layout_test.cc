// The FIFO's plain-data handle and its layout: a handle is what a kernel
// takes by value, so it must stay trivially copyable; the counters each
// side writes must not share a cache line; initFifo refuses what the
// protocols cannot work with, and leaves the block zeroed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "hora/communicator.h"
#include "protocols/fifo_handle.h"
#include "protocols/host_fifo.h"
#include "protocols/status.h"

namespace hora::protocols::testing {
namespace {

static_assert(std::is_trivially_copyable_v<FifoHandle>);
static_assert(std::is_standard_layout_v<FifoHandle>);

TEST(FifoLayout, EverySideWritesItsOwnLines) {
  constexpr FifoLayout layout = fifoLayout(64, 5);
  static_assert(layout.tailOffset - layout.headOffset >= kCacheLineBytes);
  static_assert(layout.abortOffset - layout.tailOffset >= kCacheLineBytes);
  static_assert(layout.sizesOffset - layout.abortOffset >= kCacheLineBytes);
  EXPECT_GE(layout.slotsOffset, layout.sizesOffset + 5 * sizeof(std::uint64_t));
  EXPECT_EQ(layout.slotsOffset % kSlotsAlignment, 0u);
  EXPECT_EQ(layout.stampsOffset, layout.slotsOffset + 5 * 64);
  EXPECT_EQ(layout.totalBytes, layout.stampsOffset + 5 * kStampWords * sizeof(std::uint64_t));
}

TEST(FifoLayout, HandlesOfTwoMappingsPointIntoTheirOwn) {
  const FifoLayout layout = fifoLayout(32, 3);
  void* a = std::aligned_alloc(4096, 4096);
  void* b = std::aligned_alloc(4096, 4096);
  const FifoHandle fa = initFifo(a, layout.totalBytes, 32, 3);
  const FifoHandle fb = fifoAt(b, 32, 3);
  EXPECT_EQ(fa.slots - static_cast<char*>(a), fb.slots - static_cast<char*>(b));
  EXPECT_EQ(reinterpret_cast<char*>(fa.tail) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(layout.tailOffset));
  EXPECT_EQ(reinterpret_cast<char*>(fb.abortFlag) - static_cast<char*>(b),
            static_cast<std::ptrdiff_t>(layout.abortOffset));
  EXPECT_EQ(fb.slotBytes, 32u);
  EXPECT_EQ(fb.slotCount, 3u);
  std::free(a);
  std::free(b);
}

// A block known to be zero: only the counter lines are written, so the
// slots' pages are never touched (the slots' bytes here are left as found).
TEST(FifoLayout, InitOfAZeroBlockWritesOnlyTheCounters) {
  const FifoLayout layout = fifoLayout(16, 2);
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(4096, 4096));
  std::memset(block, 0xab, 4096);
  initFifo(block, layout.totalBytes, 16, 2, BlockIsZero::Yes);
  for (std::uint64_t i = 0; i < layout.slotsOffset; ++i) ASSERT_EQ(block[i], 0) << "byte " << i;
  for (std::uint64_t i = layout.slotsOffset; i < layout.totalBytes; ++i) ASSERT_EQ(block[i], 0xab) << "byte " << i;
  std::free(block);
}

TEST(FifoLayout, InitZeroesTheBlockAndRefusesWhatCannotWork) {
  const FifoLayout layout = fifoLayout(16, 2);
  auto* block = static_cast<unsigned char*>(std::aligned_alloc(4096, 4096));
  std::memset(block, 0xab, 4096);
  const FifoHandle fifo = initFifo(block, layout.totalBytes, 16, 2);
  for (std::uint64_t i = 0; i < layout.totalBytes; ++i) ASSERT_EQ(block[i], 0) << "byte " << i;
  EXPECT_EQ(block[layout.totalBytes], 0xab);  // nothing beyond the FIFO
  raiseAbort(fifo);
  EXPECT_NE(*fifo.abortFlag, 0u);

  EXPECT_THROW(initFifo(block, 4096, 0, 2), Error);                         // no slot bytes
  EXPECT_THROW(initFifo(block, 4096, 24, 2), Error);                        // not a multiple of 16
  EXPECT_THROW(initFifo(block, 4096, 16, 0), Error);                        // no slots
  EXPECT_THROW(initFifo(block + 8, 4000, 16, 2), Error);                    // misaligned
  EXPECT_THROW(initFifo(block, layout.totalBytes - 1, 16, 2), Error);       // too small
  try {
    initFifo(block, 100, 16, 2);
    FAIL() << "a block too small was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("needs"), std::string::npos) << e.what();
  }
  std::free(block);
}

TEST(FifoLayout, FailedWaitsBecomeErrorsNamingTheWait) {
  EXPECT_NO_THROW(throwIfFailed(Status::Ok, "x"));
  const struct {
    Status status;
    ErrorKind kind;
    const char* words;
  } cases[] = {{Status::Aborted, ErrorKind::Remote, "aborted"},
               {Status::TimedOut, ErrorKind::Remote, "timed out"},
               {Status::Overflow, ErrorKind::InvalidUsage, "larger"}};
  for (const auto& c : cases) {
    try {
      throwIfFailed(c.status, "rank 1 waiting for data from rank 0");
      ADD_FAILURE() << statusName(c.status) << " did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), c.kind);
      const std::string what = e.what();
      EXPECT_NE(what.find("rank 1 waiting for data from rank 0"), std::string::npos) << what;
      EXPECT_NE(what.find(c.words), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace hora::protocols::testing
