// What one launch of a ring kernel or of the point-to-point kernel is given (plain data, copied into the
// kernel's parameters) and what a kernel leaves behind when it fails. Shared
// by the CUDA executor (host) and the kernels (device).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/ring.h"
#include "base/host_device.h"
#include "protocols/fifo_handle.h"
#include "protocols/status.h"

namespace hora::device {

// Threads of every ring kernel's block (a channel).
inline constexpr int kRingThreads = 512;

// A channel is one thread block: it sends to the next rank of the ring
// through a FIFO in that rank's memory and receives from the previous rank
// through one in this rank's memory.
struct DeviceChannel {
  protocols::FifoHandle send;
  protocols::FifoHandle recv;
};

// How a ring kernel's pieces travel (protocols/): Simple hands over whole
// slots by counters, with a fence and a barrier per piece on each side; LL
// writes 8-byte lines that carry their own flag, so a receiver's threads
// see data the moment it lands. LL spends half its FIFO on flags and moves
// small pieces, so it is for small operations (device_plan.h).
enum class DeviceProtocol : std::int32_t { Simple, LL };

// The most data one LL piece carries: half an LL slot, since every 4 bytes
// take an 8-byte line. A piece is a header line pair, then its data lines.
HORA_HOST_DEVICE constexpr std::uint64_t llPieceBytes(std::uint64_t llSlotBytes) { return llSlotBytes / 2; }

// Set up once per communicator, in device memory: every channel's FIFOs
// (one per protocol) and the ring's order of ranks.
struct DeviceRing {
  static constexpr int kMaxChannels = 32;
  DeviceChannel channels[kMaxChannels];
  DeviceChannel llChannels[kMaxChannels];
  int nranks;
  int pos;          // this rank's position on the ring
  const int* ranks; // nranks user ranks in ring order (device memory)
};

// Where a kernel records why it stopped: the first block to fail claims the
// record, writes why, then publishes status (host-mapped memory, read by
// the host without synchronising). That block then raises every abort flag
// of its rank and sets the rank's stop word (set up by the host: their
// device addresses), so that the kernel's other blocks stop at their next
// check and the rank's kernels queued behind it stop before they send
// anything (a piece they sent would reach a peer still in the failed call,
// which would take it for a mismatch). After a failure the communicator is
// unusable anyway.
//
// Every block that stops, for whatever reason, then says so on its FIFOs'
// abort lines before it ends (block_shared.cuh, endBlock): the ring
// neighbours' waits watch those lines, stop with Status::PeerStopped, and
// say so on theirs, so the whole ring stops within moments of its first
// failure instead of each rank at its own deadline. The line carries a
// stop note: the user rank whose stop came first, and why it stopped, so
// that every rank names it, and a mismatch found by one rank is a mismatch
// on every rank.
struct DeviceFailure {
  std::uint32_t status;  // a protocols::Status, 0 while nothing failed
  std::int32_t peer;     // the user rank the failed wait was for
  std::int32_t channel;
  std::uint32_t sending;  // 1: waiting for room at `peer`; 0: for its data
  std::uint32_t claimed;  // nonzero once a block owns the record
  std::int32_t ranks;
  std::int32_t self;      // this rank (user rank)
  // The user rank whose stop came first, as this rank learnt it: itself,
  // the rank a FIFO's abort line names (PeerStopped), the rank an abort
  // flag names (Aborted), or the peer a wait timed out on (TimedOut); -1
  // until a block claims the record. Lines and flags hold stop notes
  // (below).
  std::int32_t origin;
  std::uint32_t cause;  // why `origin` stopped, as learnt (a protocols::Status; Ok: not known)
  // Device address, one per rank. A raised flag holds a stop note naming
  // the user rank whose failure it stands for: this rank for its own
  // failure or abort, a peer whose process exited, the rank a failed host
  // call names.
  std::uint32_t* abortFlags;
  std::uint32_t* stopped;     // device memory: the rank's stop word
};

// What an abort line or a raised abort flag holds: the user rank whose stop
// came first, + 1, in the low 24 bits, and why it stopped (a
// protocols::Status) in the high 8. The host raises flags with the rank
// alone (an abort, a peer process that exited, a failed host call): cause
// Ok, "not known". 0: nothing stopped.
HORA_HOST_DEVICE constexpr std::uint32_t stopNote(std::int32_t origin, protocols::Status cause) {
  return (static_cast<std::uint32_t>(cause) << 24) | (static_cast<std::uint32_t>(origin + 1) & 0xffffffu);
}
HORA_HOST_DEVICE constexpr std::int32_t stopNoteOrigin(std::uint32_t note) {
  return static_cast<std::int32_t>(note & 0xffffffu) - 1;
}
// Any value above the known statuses (a line in memory a peer freed and
// reused) reads as Ok, "not known".
HORA_HOST_DEVICE constexpr protocols::Status stopNoteCause(std::uint32_t note) {
  const std::uint32_t cause = note >> 24;
  return cause <= static_cast<std::uint32_t>(protocols::Status::PeerStopped) ? static_cast<protocols::Status>(cause)
                                                                              : protocols::Status::Ok;
}

// Where a kernel says it started and finished, for the host's rule on
// launches of ranks that share a GPU in one process (launch_order.h): the
// kernel's launch number, stored into host-mapped memory once all of its
// blocks have ended (counted in `blocksEnded`, block_shared.cuh,
// recordKernelDone), and a ring kernel's collective number, stored as it
// starts; 0 where nobody counts (a kernel captured into a graph, whose
// replays the host does not launch, or a rank whose GPU no other rank of
// its process uses).
struct QueuedKernels {
  std::uint64_t sequence;
  std::uint64_t* done;        // host-mapped
  std::uint64_t collective;   // ring kernels only
  std::uint64_t* started;     // host-mapped (start_words.h)
  // Device memory, 0 between launches: the blocks of this launch that
  // have ended; the last one sets it back to 0.
  std::uint32_t* blocksEnded;
};

// What the primitives of one collective (or one send or receive) work on:
// its buffers, and where a failed wait is recorded.
struct DeviceWork {
  const void* in;
  void* out;
  DeviceFailure* failure;  // host-mapped
};

// One collective of a ring kernel's launch: what differs between the
// collectives a launch runs.
struct DeviceCollective {
  DeviceProtocol protocol;
  algorithms::RingCollective collective;
  std::int32_t root;      // user rank (Broadcast, Reduce)
  std::int32_t channels;  // the launch's first `channels` blocks run it
  const void* in;
  void* out;
  std::size_t count;  // elements of the kernel's element type
  std::size_t chunk;  // elements per ring step and channel
  std::size_t align;  // elements
  // PreMulSum with the scalar left in memory (ncclScalarDevice): where the
  // kernel reads it as the collective starts, so that it sees what the
  // stream's earlier work wrote there, in every replay of a graph; null
  // where the scalar came by value.
  const void* preMulScalar;
};

// One launch of a ring kernel: up to kMaxCollectives collectives of one
// group that the same kernel runs (one element type and reduction, the same
// scalar where it came by value) on one stream, one after the other in
// every block. A group of many small collectives then costs one launch
// instead of one each, and a rank sharing its GPU with others of its
// process waits behind its peers once per launch, not per collective
// (launch_order.h). The limit keeps the kernel's parameters small: CUDA
// copies all of them into every launch, however few collectives it holds.
struct DeviceRingLaunch {
  static constexpr int kMaxCollectives = 8;
  const DeviceRing* ring;  // device memory
  std::uint64_t timeoutNs;
  DeviceFailure* failure;        // host-mapped
  const std::uint32_t* stopped;  // device memory: the rank's stop word (DeviceFailure)
  // The launch's numbers; `collective` is that of its last collective
  // (collectives are numbered one by one, whatever shares a launch).
  QueuedKernels queue;
  std::int32_t count;
  DeviceCollective collectives[kMaxCollectives];

  // Collective i as the primitives see it.
  HORA_HOST_DEVICE DeviceWork work(int i) const { return {collectives[i].in, collectives[i].out, failure}; }
};

// One send or receive of a point-to-point launch, run by one thread block:
// `bytes` from `in` to `peer`, or from `peer` into `out`.
struct DevicePeerOp {
  const void* in;
  void* out;
  std::uint64_t bytes;
  std::int32_t peer;     // user rank
  std::int32_t sending;  // 1: a send; 0: a receive
};

// Every send and receive one group gives this rank (ncclSend, ncclRecv, and
// all-to-all, gather and scatter cut into them), launched together: a rank
// whose send waits for room at a peer must also be receiving from that peer,
// or two ranks could wait for each other.
struct DevicePeerWork {
  // Kernel parameters must fit in 4 KiB.
  static constexpr int kMaxOps = 64;
  // Per user rank (device memory): send is that rank's FIFO for data from
  // this one, recv this rank's FIFO for data from that one.
  const DeviceChannel* peers;
  DevicePeerOp ops[kMaxOps];
  int count;
  std::uint64_t timeoutNs;
  DeviceFailure* failure;  // host-mapped
  const std::uint32_t* stopped;  // device memory: the rank's stop word (DeviceFailure)
  QueuedKernels queue;
};

}  // namespace hora::device
