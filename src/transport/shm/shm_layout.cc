#include "transport/shm/shm_layout.h"

#include "protocols/ll.h"

namespace hora::transport {

namespace {
constexpr std::uint64_t kMaxSlotBytes = 64 << 10;
constexpr std::uint64_t kMinSlotBytes = 64;
constexpr std::uint64_t kMinSlots = 8;
// LL (shm_layout.h): room for several of the largest LL messages
// (kShmLLMaxBytes / 4 + 1 lines each, one more with a stamp) in flight.
static_assert(kShmLLSlotBytes * kShmLLSlotCount / protocols::kLLLineBytes >=
              4 * protocols::llStampedMessageLines(kShmLLMaxBytes));
static_assert(kShmLLStepMaxBytes >= kShmLLMaxBytes);

std::uint64_t roundUp(std::uint64_t value, std::uint64_t step) { return (value + step - 1) / step * step; }
}  // namespace

ShmGeometry shmGeometry(std::size_t fifoBytes, std::size_t sliceBytes) {
  std::uint64_t slot = kMaxSlotBytes;
  while (slot > kMinSlotBytes && (slot > sliceBytes || fifoBytes / slot < kMinSlots)) slot /= 2;
  std::uint64_t count = roundUp(fifoBytes, slot) / slot;
  count = roundUp(count < 2 ? 2 : count, 2);
  return {slot, count, kShmLLSlotBytes, kShmLLSlotCount};
}

ShmSegmentLayout shmSegmentLayout(const ShmGeometry& geometry, std::size_t pageBytes) {
  static_assert(sizeof(ShmSegmentHeader) <= 4096);
  ShmSegmentLayout layout{};
  layout.simpleOffset = roundUp(sizeof(ShmSegmentHeader), pageBytes);
  const std::uint64_t simpleBytes = protocols::fifoLayout(geometry.slotBytes, geometry.slotCount).totalBytes;
  layout.llOffset = roundUp(layout.simpleOffset + simpleBytes, pageBytes);
  const std::uint64_t llBytes = protocols::fifoLayout(geometry.llSlotBytes, geometry.llSlotCount).totalBytes;
  layout.totalBytes = roundUp(layout.llOffset + llBytes, pageBytes);
  return layout;
}

protocols::FifoHandle simpleFifoAt(void* base, const ShmGeometry& geometry, std::size_t pageBytes) {
  const ShmSegmentLayout layout = shmSegmentLayout(geometry, pageBytes);
  return protocols::fifoAt(static_cast<char*>(base) + layout.simpleOffset, geometry.slotBytes, geometry.slotCount);
}

protocols::FifoHandle llFifoAt(void* base, const ShmGeometry& geometry, std::size_t pageBytes) {
  const ShmSegmentLayout layout = shmSegmentLayout(geometry, pageBytes);
  return protocols::fifoAt(static_cast<char*>(base) + layout.llOffset, geometry.llSlotBytes, geometry.llSlotCount);
}

}  // namespace hora::transport
