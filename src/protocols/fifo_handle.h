// A FIFO of fixed-size slots in memory that both of its sides can address:
// a mapping shared by two processes, or GPU memory (device/cuda_executor.h).
// FifoHandle is the plain data a thread or a kernel holds to reach it: only
// pointers and sizes, trivially copyable, so it can be passed by value as a
// kernel argument.
//
// Pointers, not offsets: each process builds its own handle from its own
// mapping of the block (fifoAt), so the two sides may see the block at
// different addresses. Nothing relies on the ring being mapped twice back to
// back (which memory shared between GPUs of different processes cannot
// give): a slot is a slot, and a message longer than one is split into
// pieces by the protocol.
//
// Layout of one block (fifoLayout), every part on its own 64-byte line so
// that the two sides never write the same cache line:
//
//   line 0   head   u64, written by the sender only
//   line 1   tail   u64, written by the receiver only
//   line 2   abort  u32, written by whoever gives up (nonzero = abort)
//   sizes    u64 per slot, written by the sender (Simple only): the slot's
//            bytes, flags and, on a slot that begins an operation, a
//            30-bit check of the operation's stamp (simple.h)
//   slots    slotCount * slotBytes, starting on a 128-byte boundary
//   stamps   kStampWords u64 per slot, written by the sender: the full
//            stamps (Simple: the slot's; LL: a stamped message's, ll.h),
//            read by a receiver only to word a mismatch
//
// What head and tail count depends on the protocol (simple.h, ll.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/host_device.h"

namespace hora::protocols {

struct FifoHandle {
  char* slots;               // slotCount slots of slotBytes each
  std::uint64_t slotBytes;   // a multiple of kSlotGranule
  std::uint64_t slotCount;   // at least 1
  std::uint64_t* head;       // the sender's progress
  std::uint64_t* tail;       // the receiver's progress (its credits to the sender)
  std::uint64_t* sizes;      // slotCount entries: bytes in each slot (Simple)
  std::uint64_t* stamps;     // slotCount * kStampWords: the stamps board
  std::uint32_t* abortFlag;  // nonzero: every wait on this FIFO gives up
};

static_assert(std::is_trivially_copyable_v<FifoHandle>);
static_assert(std::is_standard_layout_v<FifoHandle>);

inline constexpr std::uint64_t kCacheLineBytes = 64;
// Slots start 128-byte aligned and are multiples of 16 bytes, so every slot
// suits 16-byte vector copies and LL's 8-byte lines never straddle a slot.
inline constexpr std::uint64_t kSlotsAlignment = 128;
inline constexpr std::uint64_t kSlotGranule = 16;
// Words of an operation's stamp (transport/op_stamp.h).
inline constexpr std::uint64_t kStampWords = 4;

struct FifoLayout {
  std::uint64_t headOffset;
  std::uint64_t tailOffset;
  std::uint64_t abortOffset;
  std::uint64_t sizesOffset;
  std::uint64_t slotsOffset;
  std::uint64_t stampsOffset;
  std::uint64_t totalBytes;  // what the block must hold
};

HORA_HOST_DEVICE constexpr std::uint64_t roundUpTo(std::uint64_t value, std::uint64_t step) {
  return (value + step - 1) / step * step;
}

HORA_HOST_DEVICE constexpr FifoLayout fifoLayout(std::uint64_t slotBytes, std::uint64_t slotCount) {
  FifoLayout layout{};
  layout.headOffset = 0;
  layout.tailOffset = kCacheLineBytes;
  layout.abortOffset = 2 * kCacheLineBytes;
  layout.sizesOffset = 3 * kCacheLineBytes;
  layout.slotsOffset = roundUpTo(layout.sizesOffset + slotCount * sizeof(std::uint64_t), kSlotsAlignment);
  // After the slots: where the slots start (relative to a page) stays as it
  // was before there were stamps, which the latency measurements showed
  // matters.
  layout.stampsOffset = layout.slotsOffset + slotBytes * slotCount;
  layout.totalBytes = layout.stampsOffset + slotCount * kStampWords * sizeof(std::uint64_t);
  return layout;
}

// The handle of the FIFO laid out at `block` (which must be at least
// 64-byte aligned). Computes pointers only; writes nothing, so each side
// calls it on its own mapping. initFifo (host_fifo.h) prepares a new block.
HORA_HOST_DEVICE inline FifoHandle fifoAt(void* block, std::uint64_t slotBytes, std::uint64_t slotCount) {
  char* base = static_cast<char*>(block);
  const FifoLayout layout = fifoLayout(slotBytes, slotCount);
  FifoHandle fifo{};
  fifo.slots = base + layout.slotsOffset;
  fifo.slotBytes = slotBytes;
  fifo.slotCount = slotCount;
  fifo.head = reinterpret_cast<std::uint64_t*>(base + layout.headOffset);
  fifo.tail = reinterpret_cast<std::uint64_t*>(base + layout.tailOffset);
  fifo.sizes = reinterpret_cast<std::uint64_t*>(base + layout.sizesOffset);
  fifo.stamps = reinterpret_cast<std::uint64_t*>(base + layout.stampsOffset);
  fifo.abortFlag = reinterpret_cast<std::uint32_t*>(base + layout.abortOffset);
  return fifo;
}

// The block's own abort line, whatever `abortFlag` was pointed at instead
// (a kernel's waits poll a flag in host-mapped memory): the line both
// sides of the FIFO can write and read. Null for a handle without a block.
HORA_HOST_DEVICE inline std::uint32_t* abortLineOf(const FifoHandle& fifo) {
  if (fifo.head == nullptr) return nullptr;
  constexpr FifoLayout layout = fifoLayout(kSlotGranule, 1);  // the header lines do not depend on the sizes
  return reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(fifo.head) - layout.headOffset +
                                          layout.abortOffset);
}

}  // namespace hora::protocols
