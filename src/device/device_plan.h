// How the CUDA executor runs one collective: which ring schedule, with what
// element type, how many channels (thread blocks) and how large a step; and
// how it runs a group's point-to-point work: which sends and receives, and
// which copies a rank makes to itself.
// Plain C++ without CUDA, so that every build tests it: the choice must be
// the same on every rank of a communicator (the ranks' schedules must
// match), so it reads only the operation and the communicator's shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/op.h"
#include "device/device_work.h"
#include "kernels/reduce_host.h"

namespace hora::device {

// The communicator's side of the choice, the same on every rank.
struct DeviceShape {
  int nranks = 1;
  // Channels every rank can run at once: the most thread blocks any GPU of
  // the communicator keeps resident, shared by the ranks on that GPU (all
  // of their blocks must run together, or a rank waits for a peer that
  // never gets a multiprocessor). NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS
  // narrow it.
  int minChannels = 1;
  int maxChannels = 1;
  std::size_t slotBytes = 0;  // of every Simple FIFO slot
  std::size_t llSlotBytes = 0;  // of every LL FIFO slot
  // Operations of at most this many bytes use LL (0: never), agreed by all
  // ranks: HORA_DEVICE_LL_MAX_BYTES, or 0 where NCCL_PROTO rules LL out.
  std::size_t llMaxBytes = 0;
};


// The spec of the copying collectives (all-gather, broadcast): they move
// bytes, so whatever their element type, one kernel runs them all.
inline constexpr kernels::ReduceSpec kCopyingSpec{DataType::Uint8, kernels::ReduceKind::Sum, 0};

// Whether a ring kernel of `spec` runs `collective`: every kernel runs the
// reducing collectives, only kCopyingSpec's the copying ones (the others
// are compiled without them: device/ring_kernel.cuh).
bool ringKernelRuns(const kernels::ReduceSpec& spec, algorithms::RingCollective collective);

struct DeviceLaunchPlan {
  algorithms::RingCollective collective = algorithms::RingCollective::AllReduce;
  DeviceProtocol protocol = DeviceProtocol::Simple;
  kernels::ReduceSpec spec;  // kCopyingSpec for the copying schedules
  std::size_t count = 0;     // elements of spec.type per rank block
  std::size_t chunk = 1;     // elements per ring step and channel
  std::size_t align = 1;     // elements
  int channels = 1;
  // One rank whose result is its input unchanged (every reduction but a
  // pre-multiplied sum; an average divides by 1): no kernel, but a
  // device-to-device copy, or nothing in place, as NCCL does. The copy
  // engine moves it at the memory's full bandwidth, a ring kernel's few
  // blocks at half that.
  bool copyOnly = false;
};

// Bytes of work that make one more channel worth its launch: below this
// per channel, a block's fixed costs (two barriers and a handshake per
// piece) outweigh what it adds.
inline constexpr std::size_t kBytesPerChannel = 256 << 10;
// The same for LL, whose pieces are small and whose cost is latency: a
// channel per 8 KiB, so that every block's step is at most half an 8 KiB
// piece (2 ranks) and a 64 KiB operation spreads over 8 blocks. (With one
// channel per 16 KiB, a 16 KiB all-reduce was slower by LL than by Simple.)
inline constexpr std::size_t kLLBytesPerChannel = 8 << 10;

// Kinds the point-to-point kernel runs: Send, Recv, AllToAll, Gather, Scatter.
bool isPeerKind(core::OpKind kind);

// A group's point-to-point work on one rank.
struct DevicePeerPlan {
  std::vector<DevicePeerOp> transfers;  // one thread block each
  struct SelfCopy {
    const void* from;
    void* to;
    std::size_t bytes;
  };
  std::vector<SelfCopy> copies;  // a rank's sends to itself, paired with its receives
};

// The sends and receives of the peer-kind ops among `ops` (the others are
// skipped) on `rank` of `nranks`, with all-to-all, gather and scatter cut
// into them. Zero-byte transfers are left out. Throws hora::Error
// (InvalidUsage) for what the kernel cannot run, saying why: two sends to
// one peer, or two receives from one, in one group (their pieces would
// interleave in one FIFO); a send to itself without a receive of the same
// size; more transfers than `maxBlocks` (the blocks every rank can keep
// resident at once) or DevicePeerWork::kMaxOps.
DevicePeerPlan planPeerLaunch(std::span<const core::Op> ops, int rank, int nranks, int maxBlocks);

// The plan for collective `op` (AllReduce, ReduceScatter, AllGather,
// Broadcast or Reduce). Throws hora::Error(InvalidUsage) for the kinds this
// executor does not run, naming them. The protocol is LL where the bytes
// the ring moves per rank block (an all-gather's or reduce-scatter's whole
// output or input) are at most shape.llMaxBytes.
DeviceLaunchPlan planDeviceLaunch(const core::Op& op, const DeviceShape& shape);

// Whether collective `next` can run in a ring kernel launch whose first
// collective is `first` (DeviceRingLaunch): the same kernel (element type
// and reduction; the launch's by-value scalar, unless `next` reads its own
// from memory). `first` and `next` are their plans' specs.
bool sameRingKernel(const kernels::ReduceSpec& first, const kernels::ReduceSpec& next);

// How a group's collectives are cut into ring kernel launches: runs of
// consecutive collectives of the same kernel (sameRingKernel) on the same
// stream, at most `maxPerLaunch` each. `plans[i]` and `streams[i]` are
// collective i's; returns how many collectives from `first` on share its
// launch (the next launch starts after them). Streams make the cut each
// rank's own, which is safe: the launch rule numbers collectives one by
// one, not launches (launch_order.h).
std::size_t ringLaunchSize(std::span<const DeviceLaunchPlan> plans, std::span<const void* const> streams,
                           std::size_t first, int maxPerLaunch);

// The LL limit a rank offers: `wanted` (HORA_DEVICE_LL_MAX_BYTES), or 0
// where NCCL_PROTO (`ncclProto`) rules LL out. As NCCL reads it, that is a
// comma-separated list of the protocols allowed ("LL,Simple") or, after a
// leading '^', of those ruled out ("^LL"); names are matched without case,
// and LL128 is not LL.
std::uint64_t deviceLLMaxBytes(const std::optional<std::string>& ncclProto, std::uint64_t wanted);

// The most channels each rank on one GPU may use: `residentBlocks` (blocks
// of a ring kernel the GPU keeps resident at once) shared by `ranksOnGpu`,
// capped by `maxWanted` (NCCL_MAX_NCHANNELS) and DeviceRing::kMaxChannels.
// 0 when not even one block per rank fits (the caller refuses).
int channelsPerRank(int residentBlocks, int ranksOnGpu, int maxWanted);

}  // namespace hora::device
