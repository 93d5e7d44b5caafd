// The LL primitives of the ring kernels: the contract of algorithms/
// primitives.h over the LL FIFOs of protocols/ll.h in GPU memory, for small
// operations.
//
// Why a second protocol: with Simple, a piece reaches the next rank only
// after the sender's block met at a barrier and one thread published it
// with a release at system scope, and the receiver's thread 0 saw the
// counter and passed it on through another barrier. For a few bytes those
// handovers are the whole cost. An LL line carries its own flag, so each
// receiving thread polls the very lines it needs and uses them the moment
// they land; the sender's threads store lines and move on, without a fence.
//
// A piece here is a header line pair, whose first word holds the piece's
// bytes and whether it ends the message, then two lines (8 data bytes) per
// thread share: thread t handles bytes [8k, 8k + 8) of the piece for every
// k = t (mod blockDim). A pair is written and polled as one 16-byte access
// (LLSender::writePair, LLReceiver::tryPair): pieces start on even lines
// and the ring's lines are even, so pairs stay aligned. Both sides cut pieces alike, so the receiver knows
// the size it expects; the header lets it catch a peer whose call differs
// (the kernel stops with an error naming that peer, as Simple's size check
// does) instead of reading the peer's next piece as data.
//
// Credits: per piece, thread 0 waits for room for the whole piece before
// any thread writes, and after the barrier that ends a piece the receiving
// thread 0 returns its lines (LLReceiver::returnCredits). Every thread keeps
// its own copy of the sender's and receiver's line counts and advances them
// alike, so no count travels through shared memory.
//
// A wait polls its lines and the block's status, and every kCheckEvery
// polls the abort flag, the deadline and the FIFO's abort line, where a
// neighbour that stopped says so (protocols/spin_wait.h, device_work.h);
// a piece's header wait also watches the peer's Simple FIFO
// (protocol_watch.cuh). When one thread fails (a wrong header, say), the
// others stop waiting for lines that will never come. A failed thread leaves its loop but still meets
// the block at the barrier, where all threads decide together to stop
// (stopped_).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "algorithms/primitives.h"
#include "device/block_shared.cuh"
#include "device/protocol_watch.cuh"
#include "protocols/ll.h"
#include "protocols/spin_wait.h"

namespace hora::device {

// One thread's share of a piece: 8 data bytes, two LL lines.
inline constexpr std::uint64_t kLLPackBytes = 8;
// Lines of a piece's header: a pair, so that data pairs stay pair-aligned.
inline constexpr std::uint64_t kLLHeaderLines = 2;

template <typename T>
union LLPack {
  std::uint64_t raw;
  std::uint32_t words[2];
  T elements[kLLPackBytes / sizeof(T)];
};

// The header word of a piece: its bytes, and the top bit on a message's last.
__device__ inline std::uint32_t llHeaderWord(std::uint64_t bytes, bool last) {
  return static_cast<std::uint32_t>(bytes) | (last ? 0x80000000u : 0u);
}

template <typename T, typename Math>
class LLRingPrimitives : public RingMoves<LLRingPrimitives<T, Math>> {
 public:
  // `simpleRecv`: the Simple FIFO from the same peer (device memory),
  // watched while a piece's header is awaited (protocol_watch.cuh).
  __device__ LLRingPrimitives(const DeviceWork& work, const DeviceChannel& channel, BlockShared* shared, Math math,
                              std::uint64_t deadline, const protocols::FifoHandle* simpleRecv)
      : in_(static_cast<const T*>(work.in)),
        out_(static_cast<T*>(work.out)),
        pieceBytes_(llPieceBytes(channel.recv.slotBytes)),
        sender_(channel.send),
        receiver_(channel.recv),
        recvAbort_(channel.recv.abortFlag),
        sendLine_(protocols::abortLineOf(channel.send)),
        recvLine_(protocols::abortLineOf(channel.recv)),
        simpleRecv_(simpleRecv),
        shared_(shared),
        math_(math),
        deadline_(deadline),
        failure_(work.failure),
        // At a barrier, as every decision to stop: thread 0 may record a
        // failure in its first move, and a warp that read the status after
        // that would return where the others wait at a barrier.
        stopped_(blockStoppedAtBarrier(shared)) {}


 private:
  friend class RingMoves<LLRingPrimitives>;
  template <bool kLocal, bool kRemote, bool kOut, bool kSend, bool kPost>
  __device__ void move(int from, int to, std::size_t i, std::size_t o, std::size_t n) {
    using protocols::Status;
    const T* in = in_ + i;
    T* out = out_ + o;
    std::uint64_t left = n * sizeof(T);
    do {
      const std::uint64_t piece = left < pieceBytes_ ? left : pieceBytes_;
      const bool last = piece == left;
      const std::uint64_t packs = (piece + kLLPackBytes - 1) / kLLPackBytes;
      const std::uint64_t lines = kLLHeaderLines + 2 * packs;
      if constexpr (kSend) {
        if (threadIdx.x == 0 && !stopped_) {
          const Status status = sender_.waitRoom(lines, deadline_, StopLine{sendLine_});
          if (status != Status::Ok) recordFailure(shared_, failure_, status, to, true, sendLine_);
        }
        stopped_ = __syncthreads_or(shared_->status != Status::Ok);  // room for the piece before anyone writes
      }
      if (stopped_) return;
      if (threadIdx.x == 0) {
        if constexpr (kSend) sender_.writePair(0, llHeaderWord(piece, last), 0);
        if constexpr (kRemote) {
          std::uint32_t header = 0, unused = 0;
          if (waitHeader(&header, &unused, from) && header != llHeaderWord(piece, last))
            recordFailure(shared_, failure_, Status::Overflow, from, false);
        }
      }
      for (std::uint64_t k = threadIdx.x; k < packs; k += blockDim.x) {
        LLPack<T> local{}, remote{}, result{};
        const std::size_t first = static_cast<std::size_t>(k * (kLLPackBytes / sizeof(T)));
        const std::size_t count = elementsOf(piece / sizeof(T), first);
        if constexpr (kLocal) load(in + first, count, &local);
        if constexpr (kRemote) {
          if (!waitPair(kLLHeaderLines + 2 * k, &remote.words[0], &remote.words[1], from)) break;
        }
#pragma unroll
        for (std::size_t e = 0; e < kLLPackBytes / sizeof(T); ++e)
          result.elements[e] = math_.template operator()<kLocal, kRemote, kPost>(local.elements[e], remote.elements[e]);
        if constexpr (kOut) store(out + first, count, result);
        if constexpr (kSend) sender_.writePair(kLLHeaderLines + 2 * k, result.words[0], result.words[1]);
      }
      stopped_ = __syncthreads_or(shared_->status != Status::Ok);  // every line read and written
      if (stopped_) return;
      if constexpr (kSend) {
        sender_.advance(lines);
        if (threadIdx.x == 0) sender_.recordProgress();
      }
      if constexpr (kRemote) {
        receiver_.pass(lines);
        if (threadIdx.x == 0) receiver_.returnCredits();
      }
      const std::size_t elements = piece / sizeof(T);
      in += elements;
      out += elements;
      left -= piece;
    } while (left != 0);
  }

  // Elements of a pack starting at element `first` of a piece of `total`.
  __device__ static std::size_t elementsOf(std::size_t total, std::size_t first) {
    constexpr std::size_t kPer = kLLPackBytes / sizeof(T);
    return total - first < kPer ? total - first : kPer;
  }
  __device__ static void load(const T* from, std::size_t count, LLPack<T>* pack) {
    if (count * sizeof(T) == kLLPackBytes && reinterpret_cast<std::uintptr_t>(from) % kLLPackBytes == 0) {
      pack->raw = *reinterpret_cast<const std::uint64_t*>(from);
      return;
    }
    for (std::size_t e = 0; e < count; ++e) pack->elements[e] = from[e];
  }
  __device__ static void store(T* to, std::size_t count, const LLPack<T>& pack) {
    if (count * sizeof(T) == kLLPackBytes && reinterpret_cast<std::uintptr_t>(to) % kLLPackBytes == 0) {
      *reinterpret_cast<std::uint64_t*>(to) = pack.raw;
      return;
    }
    for (std::size_t e = 0; e < count; ++e) to[e] = pack.elements[e];
  }

  // Waits for lines k and k + 1 of the piece the receiver is at; false
  // when this wait, or another thread of the block, failed. `watch` as
  // spinUntil's (every wait also watches the FIFO's abort line).
  template <class Watch = protocols::NoWatch>
  __device__ bool waitPair(std::uint64_t k, std::uint32_t* first, std::uint32_t* second, int from,
                           Watch watch = Watch{}) {
    using Watches = protocols::EitherWatch<StopLine, Watch>;
    using protocols::Status;
    bool blockFailed = false;
    // The pair, or another thread's failure, which ends the wait too (a
    // shared-memory load, cheap beside the poll itself).
    const Status status = protocols::spinUntil<protocols::DeviceOrdering>(
        [&] {
          if (receiver_.tryPair(k, first, second)) return true;
          blockFailed = *static_cast<volatile const Status*>(&shared_->status) != Status::Ok;
          return blockFailed;
        },
        recvAbort_, deadline_, Watches{StopLine{recvLine_}, watch});
    if (status != Status::Ok) recordFailure(shared_, failure_, status, from, false, recvLine_);
    return status == Status::Ok && !blockFailed;
  }
  // Thread 0: a piece's header pair, watching the Simple FIFO meanwhile.
  __device__ bool waitHeader(std::uint32_t* header, std::uint32_t* unused, int from) {
    return waitPair(0, header, unused, from, OtherProtocolWatch<SimpleHasData>(SimpleHasData{simpleRecv_}));
  }

  const T* in_;
  T* out_;
  std::uint64_t pieceBytes_;
  protocols::LLSender<protocols::DeviceOrdering> sender_;
  protocols::LLReceiver<protocols::DeviceOrdering> receiver_;
  const std::uint32_t* recvAbort_;
  // The FIFOs' abort lines, where the neighbours say they stopped.
  const std::uint32_t* sendLine_;
  const std::uint32_t* recvLine_;
  const protocols::FifoHandle* simpleRecv_;
  BlockShared* shared_;
  Math math_;
  std::uint64_t deadline_;
  DeviceFailure* failure_;
  // Whether the block stopped, as every thread saw it at the last barrier.
  // Any thread may fail between barriers (a wrong header, a wait that gave
  // up), so the decision to stop is taken only at a barrier, by all threads
  // alike (__syncthreads_or): a thread that read the shared status just
  // after another wrote it would otherwise leave while the rest go on to a
  // barrier it never reaches.
  bool stopped_;
};

static_assert(algorithms::Primitives<LLRingPrimitives<
                  float, ElementMath<float, kernels::FuncSum<float>, kernels::FuncIdentity<float>,
                                     kernels::FuncIdentity<float>>>>);

}  // namespace hora::device
