// The Simple primitives of the ring kernels (and of the point-to-point
// kernel): the contract of algorithms/primitives.h over the Simple FIFOs of
// protocols/simple.h in GPU memory.
//
// In each primitive, thread 0 of the block waits (for the previous rank's
// data, for room at the next rank) and then publishes; every thread moves
// its share of the piece between those waits; barriers hand the work from
// one to the other (protocols/device_ordering.h says why a barrier and one
// thread's acquire or release suffice). A message longer than a slot moves
// a slot's worth at a time, cut the same way on both sides, so a piece that
// arrives is forwarded as one piece.
//
// A failed wait (abort flag, deadline, a piece of the wrong size, the
// peer's data on the LL FIFO instead: protocol_watch.cuh, the peer's stop
// on the FIFO's abort line: device_work.h) is recorded in the work's
// failure record and makes every later primitive of the block return at
// once: the kernel ends, and the host reports it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "algorithms/primitives.h"
#include "device/block_shared.cuh"
#include "device/protocol_watch.cuh"
#include "protocols/simple.h"

namespace hora::device {

inline constexpr std::size_t kPackBytes = 16;

template <typename T>
union Pack {
  uint4 raw;
  T elements[kPackBytes / sizeof(T)];
};

__device__ inline bool aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kPackBytes == 0;
}

template <typename T, typename Math>
class SimpleRingPrimitives : public RingMoves<SimpleRingPrimitives<T, Math>> {
 public:
  // `llRecv`: the LL FIFO from the same peer (device memory), watched while
  // a wait lasts (protocol_watch.cuh); null where there is none.
  __device__ SimpleRingPrimitives(const DeviceWork& work, const DeviceChannel& channel, BlockShared* shared,
                            Math math, std::uint64_t deadline, const protocols::FifoHandle* llRecv)
      : in_(static_cast<const T*>(work.in)),
        out_(static_cast<T*>(work.out)),
        slotBytes_(channel.recv.slotBytes),
        sender_(channel.send),
        receiver_(channel.recv),
        sendLine_(protocols::abortLineOf(channel.send)),
        recvLine_(protocols::abortLineOf(channel.recv)),
        llRecv_(llRecv),
        shared_(shared),
        math_(math),
        deadline_(deadline),
        failure_(work.failure) {}


 private:
  friend class RingMoves<SimpleRingPrimitives>;
  template <bool kLocal, bool kRemote, bool kOut, bool kSend, bool kPost>
  __device__ void move(int from, int to, std::size_t i, std::size_t o, std::size_t n) {
    const T* in = in_ + i;
    T* out = out_ + o;
    std::uint64_t left = n * sizeof(T);
    do {
      const std::uint64_t piece = left < slotBytes_ ? left : slotBytes_;
      const bool last = piece == left;
      if (threadIdx.x == 0 && shared_->status == protocols::Status::Ok) waitPiece<kRemote, kSend>(from, to, piece, last);
      __syncthreads();
      if (shared_->status != protocols::Status::Ok) return;  // every thread reads it between the same barriers
      if constexpr (kRemote || kSend) {
        moveElements<kLocal, kRemote, kOut, kSend, kPost>(in, reinterpret_cast<const T*>(shared_->received), out,
                                                          reinterpret_cast<T*>(shared_->sendSlot), piece / sizeof(T));
      } else {
        moveElements<kLocal, kRemote, kOut, kSend, kPost>(in, nullptr, out, nullptr, piece / sizeof(T));
      }
      __syncthreads();  // the piece is read and written before it goes
      if (threadIdx.x == 0) {
        if constexpr (kRemote) receiver_.release();
        if constexpr (kSend) sender_.publish(piece, last);
      }
      const std::size_t elements = piece / sizeof(T);
      in += elements;
      out += elements;
      left -= piece;
    } while (left != 0);
  }

  // Thread 0: the received piece (which must be exactly the one expected,
  // else the ranks disagree on the collective) and room for the next rank.
  template <bool kRemote, bool kSend>
  __device__ void waitPiece(int from, int to, std::uint64_t piece, bool last) {
    using protocols::Status;
    Status status = Status::Ok;
    if constexpr (kRemote) {
      protocols::SimplePiece got{};
      using Watch = protocols::EitherWatch<StopLine, OtherProtocolWatch<LLHasData>>;
      const Watch watch{StopLine{recvLine_}, OtherProtocolWatch<LLHasData>(LLHasData{llRecv_})};
      status = receiver_.waitData(&got, deadline_, watch);
      if (status == Status::Ok && (got.bytes != piece || got.last != last)) status = Status::Overflow;
      shared_->received = got.data;
      if (status != Status::Ok) return fail(status, from, false, recvLine_);
    }
    if constexpr (kSend) {
      status = sender_.waitRoom(&shared_->sendSlot, deadline_, StopLine{sendLine_});
      if (status != Status::Ok) return fail(status, to, true, sendLine_);
    }
  }

  __device__ void fail(protocols::Status status, int peer, bool sending, const std::uint32_t* line) {
    recordFailure(shared_, failure_, status, peer, sending, line);
  }

  // Every thread of the block: its share of `count` elements, 16 bytes at a
  // time where every buffer allows it (slots always do), kUnroll packs per
  // thread loaded before any is stored, so that each thread keeps several
  // loads in flight instead of waiting out one memory latency per pack.
  template <bool kLocal, bool kRemote, bool kOut, bool kSend, bool kPost>
  __device__ void moveElements(const T* in, const T* received, T* out, T* slot, std::size_t count) {
    constexpr std::size_t kPer = kPackBytes / sizeof(T);
    constexpr int kUnroll = 4;
    std::size_t done = 0;
    if ((!kLocal || aligned16(in)) && (!kOut || aligned16(out))) {
      const std::size_t packs = count / kPer;
      const std::size_t step = static_cast<std::size_t>(blockDim.x) * kUnroll;
      for (std::size_t first = threadIdx.x; first < packs; first += step) {
        Pack<T> a[kUnroll], b[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const std::size_t p = first + static_cast<std::size_t>(u) * blockDim.x;
          if (p < packs) {
            if constexpr (kLocal) a[u].raw = reinterpret_cast<const uint4*>(in)[p];
            if constexpr (kRemote) b[u].raw = reinterpret_cast<const uint4*>(received)[p];
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const std::size_t p = first + static_cast<std::size_t>(u) * blockDim.x;
          if (p >= packs) break;
          Pack<T> result;
#pragma unroll
          for (std::size_t e = 0; e < kPer; ++e)
            result.elements[e] = math_.template operator()<kLocal, kRemote, kPost>(a[u].elements[e], b[u].elements[e]);
          if constexpr (kOut) reinterpret_cast<uint4*>(out)[p] = result.raw;
          if constexpr (kSend) reinterpret_cast<uint4*>(slot)[p] = result.raw;
        }
      }
      done = packs * kPer;
    }
    for (std::size_t e = done + threadIdx.x; e < count; e += blockDim.x) {
      const T value = math_.template operator()<kLocal, kRemote, kPost>(kLocal ? in[e] : T{}, kRemote ? received[e] : T{});
      if constexpr (kOut) out[e] = value;
      if constexpr (kSend) slot[e] = value;
    }
  }

  const T* in_;
  T* out_;
  std::uint64_t slotBytes_;
  protocols::SimpleSender<protocols::DeviceOrdering> sender_;
  protocols::SimpleReceiver<protocols::DeviceOrdering> receiver_;
  // The FIFOs' abort lines, where the neighbours say they stopped.
  const std::uint32_t* sendLine_;
  const std::uint32_t* recvLine_;
  const protocols::FifoHandle* llRecv_;
  BlockShared* shared_;
  Math math_;
  std::uint64_t deadline_;
  DeviceFailure* failure_;
};

static_assert(algorithms::Primitives<SimpleRingPrimitives<
                  float, ElementMath<float, kernels::FuncSum<float>, kernels::FuncIdentity<float>,
                                     kernels::FuncIdentity<float>>>>);

}  // namespace hora::device
