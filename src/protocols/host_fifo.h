// Host-side helpers around the protocols: preparing a FIFO in a memory block,
// raising its abort flag, and turning a wait's Status into a hora::Error.
// (The protocols themselves return statuses: they also run in kernels.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/fifo_handle.h"
#include "protocols/status.h"

namespace hora::protocols {

// Lays a FIFO of slotCount slots of slotBytes each out in `block` (at least
// fifoLayout(...).totalBytes bytes, 64-byte aligned: a page of a mapping
// is), zeroing it all: counters at 0, no abort, and every LL line flagged 0,
// which no line of the stream carries before the ring has wrapped. Call it
// once, before either side starts; every other mapping of the block then
// takes its handle from fifoAt(). Throws InvalidArgument for a slot size
// that is not a nonzero multiple of kSlotGranule, no slots, or a block too
// small or misaligned.
//
// A block the kernel has just handed out (a new shared-memory file, an
// anonymous mapping) reads as zero already; writing its slots would only
// make the kernel allocate and clear every page of them up front, a cost
// that grows with the square of the ranks when every pair connects (an
// all-to-all). For such a block pass BlockIsZero::Yes: only the counter
// lines are written, and slot pages appear when a message first uses them.
enum class BlockIsZero : bool { No, Yes };
FifoHandle initFifo(void* block, std::size_t blockBytes, std::uint64_t slotBytes, std::uint64_t slotCount,
                    BlockIsZero isZero = BlockIsZero::No);

// Makes every current and future wait on the FIFO end with Status::Aborted.
void raiseAbort(const FifoHandle& fifo);

// Throws a hora::Error unless status is Ok: Remote for Aborted and TimedOut
// (the peer gave up or never came), InvalidUsage for Overflow (the two sides
// disagree on a message's size). `what` names the wait, for the message:
// e.g. "rank 2 waiting for data from rank 1 on channel 0".
void throwIfFailed(Status status, const char* what);

}  // namespace hora::protocols
