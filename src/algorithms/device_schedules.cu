// The schedules of algorithms/, compiled by nvcc for the GPU. Each kernel
// runs one schedule per thread block (a block is a channel) over primitives
// that only tally what they would move, so that every schedule and the
// primitives contract compile as device code at build time. The CUDA
// executor (device/ring_kernel.cuh) runs the ring schedules with primitives
// that move bytes; the direct, point-to-point and window schedules are
// compiled here only, until it runs them too.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "algorithms/direct.h"
#include "algorithms/point_to_point.h"
#include "algorithms/primitives.h"
#include "algorithms/ring.h"
#include "algorithms/windows.h"

namespace hora::algorithms::device_check {

// Elements each kind of access would touch on one channel.
struct Tally {
  unsigned long long sent;
  unsigned long long received;
  unsigned long long written;
};

struct TallyPrimitives {
  Tally* tally;

  __device__ void send(int, std::size_t, std::size_t n) { tally->sent += n; }
  __device__ void recv(int, std::size_t, std::size_t n) { take(n), write(n); }
  __device__ void recvReduceSend(int, int, std::size_t, std::size_t n) { take(n), tally->sent += n; }
  __device__ void recvReduceCopy(int, std::size_t, std::size_t, std::size_t n) { take(n), write(n); }
  __device__ void recvReduceCopySend(int, int, std::size_t, std::size_t, std::size_t n) {
    take(n), write(n), tally->sent += n;
  }
  __device__ void recvCopySend(int, int, std::size_t, std::size_t n) {
    take(n), write(n), tally->sent += n;
  }
  __device__ void copySend(int, std::size_t, std::size_t, std::size_t n) { write(n), tally->sent += n; }
  __device__ void localReduceCopy(std::size_t, std::size_t, std::size_t n) { write(n); }
  __device__ void localCopy(std::size_t, std::size_t, std::size_t n) { write(n); }
  __device__ void recvReduceCopyAll(const int*, int k, int, std::size_t, std::size_t, std::size_t n) {
    take(n * static_cast<std::size_t>(k - 1)), write(n);
  }

  __device__ void take(std::size_t n) { tally->received += n; }
  __device__ void write(std::size_t n) { tally->written += n; }
};

static_assert(Primitives<TallyPrimitives>);

// The window primitives (windows.h), tallied alike.
struct TallyWindows {
  Tally* tally;

  // Elements reduced (read from every rank) and copied, per call.
  __device__ void reduce(std::size_t, int, std::size_t, std::size_t n) { tally->received += n; }
  __device__ void copy(int, std::size_t, std::size_t, std::size_t n) { tally->written += n; }
};

enum class Schedule {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  DirectAllReduce,
  AllToAll,
  Gather,
  Scatter,
  SendMessage,
  RecvMessage,
  WindowAllReduce,
  WindowReduceScatter,
  WindowAllGather,
  WindowBroadcast,
};

template <Schedule S>
__global__ void tallySchedule(Ring ring, int root, std::size_t count, std::size_t chunk,
                              std::size_t align, Tally* tallies) {
  if (threadIdx.x != 0) return;
  const Channel channel{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)};
  TallyPrimitives p{&tallies[blockIdx.x]};
  if constexpr (S == Schedule::AllReduce) ringAllReduce(p, ring, channel, count, chunk, align);
  if constexpr (S == Schedule::ReduceScatter) ringReduceScatter(p, ring, channel, count, chunk, align);
  if constexpr (S == Schedule::AllGather) ringAllGather(p, ring, channel, count, chunk, align);
  if constexpr (S == Schedule::Broadcast) ringBroadcast(p, ring, channel, root, count, chunk, align);
  if constexpr (S == Schedule::Reduce) ringReduce(p, ring, channel, root, count, chunk, align);
  if constexpr (S == Schedule::DirectAllReduce)
    directAllReduce(p, ring.ranks, ring.nranks, ring.self(), channel, count, align);
  if constexpr (S == Schedule::AllToAll) directAllToAll(p, ring.nranks, ring.self(), channel, count, align);
  if constexpr (S == Schedule::Gather)
    directGather(p, ring.nranks, ring.self(), root, channel, count, align);
  if constexpr (S == Schedule::Scatter)
    directScatter(p, ring.nranks, ring.self(), root, channel, count, align);
  if constexpr (S == Schedule::SendMessage) sendMessage(p, root, channel, count, align);
  if constexpr (S == Schedule::RecvMessage) recvMessage(p, root, channel, count, align);
  TallyWindows w{&tallies[blockIdx.x]};
  if constexpr (S == Schedule::WindowAllReduce)
    windowReduce(w, ring.nranks, ring.self(), kEveryRank, channel, count, align);
  if constexpr (S == Schedule::WindowReduceScatter) windowReduceScatter(w, ring.self(), channel, count, align);
  if constexpr (S == Schedule::WindowAllGather) windowAllGather(w, ring.nranks, channel, count, align);
  if constexpr (S == Schedule::WindowBroadcast) windowBroadcast(w, root, channel, count, align);
}

// Launches every schedule's kernel once, one block per channel; a launch
// in host code is what makes nvcc compile a kernel template for the device.
template <Schedule... S>
void launchEach(int channels, Ring ring, int root, std::size_t count, std::size_t chunk,
                std::size_t align, Tally* tallies) {
  (tallySchedule<S><<<channels, 1>>>(ring, root, count, chunk, align, tallies), ...);
}
template void launchEach<Schedule::AllReduce, Schedule::ReduceScatter, Schedule::AllGather,
                         Schedule::Broadcast, Schedule::Reduce, Schedule::DirectAllReduce,
                         Schedule::AllToAll, Schedule::Gather, Schedule::Scatter,
                         Schedule::SendMessage, Schedule::RecvMessage, Schedule::WindowAllReduce,
                         Schedule::WindowReduceScatter, Schedule::WindowAllGather,
                         Schedule::WindowBroadcast>(int, Ring, int, std::size_t, std::size_t,
                                                    std::size_t, Tally*);

}  // namespace hora::algorithms::device_check
