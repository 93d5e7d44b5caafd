// What one shared-memory connection's segment holds, and where. The sender
// creates the segment (a memfd, mapped once by each side) and lays it out;
// the receiver checks the header and takes its handles from the same
// offsets in its own mapping.
//
//   page 0      header: magic, the FIFOs' geometry, and `taken`
//   simple      a FIFO of Simple slots (protocols/simple.h): bulk data
//   ll          a FIFO for LL (protocols/ll.h): small messages
//
// Both FIFOs are protocols/fifo_handle.h blocks: nothing needs the memory
// mapped twice or at the same address, which memory shared between GPUs of
// different processes could not give either.
//
// `receiverSleeps` and `senderSleeps` are where each end sleeps when ranks
// share cores (wake_line.h), each on its own line.
//
// `taken` counts the stream bytes the receiver has completed (its own
// counter, on its own cache line): the sender's acknowledgedBytes(), which a
// single-copy sender waits on before it reuses a buffer it only described.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/fifo_handle.h"
#include "protocols/ll.h"
#include "transport/wake_line.h"

namespace hora::transport {

// The LL FIFO carries a message in pieces of at most this many bytes, and
// is sized to hold a few such pieces. Which messages take LL at all is the
// planner's choice (HORA_LL_MAX_BYTES, core/tuning.h).
inline constexpr std::size_t kShmLLMaxBytes = 512;
// The LL FIFO: a ring of 64 KiB (8192 lines, 32 KiB of data), room for
// several of the largest LL pieces in flight.
inline constexpr std::uint64_t kShmLLSlotBytes = 4 << 10;
inline constexpr std::uint64_t kShmLLSlotCount = 16;
// The most bytes a ring step may move over LL: the data of as many stamped
// pieces as fill half the ring. A ring step's bytes must fit in half of
// the FIFO they cross, as on Simple (core/communicator.cc says why): a rank
// that forwards what it receives takes a step's bytes out of its incoming
// FIFO only as it finds room in the outgoing one, so with every FIFO of the
// ring full of a step too large for it no rank moves again.
inline constexpr std::size_t kShmLLStepMaxBytes =
    kShmLLSlotBytes * kShmLLSlotCount / protocols::kLLLineBytes / 2 /
    protocols::llStampedMessageLines(kShmLLMaxBytes) * kShmLLMaxBytes;

struct ShmGeometry {
  std::uint64_t slotBytes;    // Simple
  std::uint64_t slotCount;
  std::uint64_t llSlotBytes;  // LL
  std::uint64_t llSlotCount;
};

// The Simple slots for a FIFO of about `fifoBytes` (HORA_SHM_FIFO_SIZE)
// filled by an executor that moves `sliceBytes` at a time: slots of a power
// of two bytes, 64 KiB at most, no larger than the slice (which the
// executor rounds to whole slots: communicator.cc says why) and small
// enough that at least 8 fit; an even number of them, holding at least
// fifoBytes, so that half the slots hold half a FIFO.
ShmGeometry shmGeometry(std::size_t fifoBytes, std::size_t sliceBytes);

struct alignas(64) ShmSegmentHeader {
  // "hora-sh2": the header of this layout (with wake lines); a peer built
  // with another layout is refused by name instead of misread.
  static constexpr std::uint64_t kMagic = 0x686f72612d736832ull;
  std::uint64_t magic;
  ShmGeometry geometry;
  // Nonzero: each end wakes the other when it sleeps (wake_line.h); set
  // by the sender, alike on every connection of a communicator.
  std::uint32_t wakesSleepers;
  alignas(64) std::uint64_t taken;  // written by the receiver only
  WakeLine receiverSleeps;          // the receiver waits for data
  WakeLine senderSleeps;            // the sender waits for room or `taken`
};

struct ShmSegmentLayout {
  std::uint64_t simpleOffset;
  std::uint64_t llOffset;
  std::uint64_t totalBytes;  // whole pages
};

ShmSegmentLayout shmSegmentLayout(const ShmGeometry& geometry, std::size_t pageBytes);

// The two FIFOs of a segment mapped at `base`.
protocols::FifoHandle simpleFifoAt(void* base, const ShmGeometry& geometry, std::size_t pageBytes);
protocols::FifoHandle llFifoAt(void* base, const ShmGeometry& geometry, std::size_t pageBytes);

}  // namespace hora::transport
