// copyStreaming: ordinary stores up to the destination's first 16-byte
// boundary, streaming stores for whole 64-byte lines, ordinary stores for
// the tail. Each of those three parts has its own length arithmetic, so
// every size from 0 to 300 (and a few large ones) is copied at every
// combination of destination and source misalignment from 0 to 17 bytes,
// and the result is compared byte for byte, with guard bytes around the
// destination that must stay untouched.
#include "kernels/copy_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "byte_pattern.h"

namespace hora::kernels::testing {
namespace {

using transport::testing::fillPattern;
using transport::testing::patternMismatches;

constexpr std::size_t kMaxMisalignment = 17;
constexpr std::size_t kGuardBytes = 64;
constexpr char kGuardByte = static_cast<char>(0xa5);

// A buffer whose `start()` lies on a 64-byte boundary, with room for
// misalignment and guard bytes on both sides.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t bytes) : storage_(bytes + 2 * kGuardBytes + 128) {}
  char* start() {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data()) + kGuardBytes;
    return reinterpret_cast<char*>((address + 63) / 64 * 64);
  }

 private:
  std::vector<char> storage_;
};

// Copies `bytes` between the two misalignments; on failure says where.
::testing::AssertionResult copiesExactly(AlignedBuffer& dstBuffer, AlignedBuffer& srcBuffer,
                                         std::size_t bytes, std::size_t dstOffset,
                                         std::size_t srcOffset) {
  char* dst = dstBuffer.start() + dstOffset;
  char* src = srcBuffer.start() + srcOffset;
  const std::uint64_t seed = bytes * 331 + dstOffset * 19 + srcOffset;  // a new pattern each case
  fillPattern(src, bytes, 0, seed);
  char* guardedBegin = dst - kGuardBytes;
  const std::size_t guardedBytes = bytes + 2 * kGuardBytes;
  std::fill(guardedBegin, guardedBegin + guardedBytes, kGuardByte);

  copyStreaming(dst, src, bytes);
  streamingFence();

  std::size_t firstBad = 0;
  if (std::size_t bad = patternMismatches(dst, bytes, 0, seed, &firstBad); bad > 0)
    return ::testing::AssertionFailure()
           << bytes << " bytes, dst+" << dstOffset << ", src+" << srcOffset << ": " << bad
           << " bytes wrong, the first at " << firstBad;
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    if (guardedBegin[i] != kGuardByte)
      return ::testing::AssertionFailure()
             << bytes << " bytes, dst+" << dstOffset << ", src+" << srcOffset << ": wrote "
             << kGuardBytes - i << " bytes before dst";
    if (dst[bytes + i] != kGuardByte)
      return ::testing::AssertionFailure()
             << bytes << " bytes, dst+" << dstOffset << ", src+" << srcOffset << ": wrote byte "
             << bytes + i << " past dst's end";
  }
  return ::testing::AssertionSuccess();
}

TEST(CopyStreamingTest, CopiesEverySmallSizeAtEveryMisalignment) {
  constexpr std::size_t kMaxBytes = 300;
  AlignedBuffer dst(kMaxBytes + kMaxMisalignment), src(kMaxBytes + kMaxMisalignment);
  for (std::size_t bytes = 0; bytes <= kMaxBytes; ++bytes)
    for (std::size_t dstOffset = 0; dstOffset <= kMaxMisalignment; ++dstOffset)
      for (std::size_t srcOffset = 0; srcOffset <= kMaxMisalignment; ++srcOffset)
        ASSERT_TRUE(copiesExactly(dst, src, bytes, dstOffset, srcOffset));
}

TEST(CopyStreamingTest, CopiesLargeSizesAtEveryMisalignment) {
  // Many whole lines, with every possible remainder of a line left over.
  const std::vector<std::size_t> sizes = {4096, 4096 + 63, 65536 + 17, 300001};
  AlignedBuffer dst(300001 + kMaxMisalignment), src(300001 + kMaxMisalignment);
  for (std::size_t bytes : sizes)
    for (std::size_t dstOffset = 0; dstOffset <= kMaxMisalignment; ++dstOffset)
      for (std::size_t srcOffset = 0; srcOffset <= kMaxMisalignment; ++srcOffset)
        ASSERT_TRUE(copiesExactly(dst, src, bytes, dstOffset, srcOffset));
}

TEST(CopyStreamingTest, FenceMayBeCalledAnyTime) {
  streamingFence();
  streamingFence();
  char byte = 0;
  const char one = 1;
  copyStreaming(&byte, &one, 1);
  streamingFence();
  EXPECT_EQ(byte, 1);
}

}  // namespace
}  // namespace hora::kernels::testing
