// The ring kernels: the schedules of algorithms/ring.h run by a thread block
// per channel, over the primitives of the protocol the plan chose (Simple,
// simple_primitives.cuh; LL, ll_primitives.cuh). Included by the files that
// instantiate them for each element type (ring_kernels_*.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstring>

#include "algorithms/ring.h"
#include "device/block_shared.cuh"
#include "device/cuda_check.h"
#include "device/ll_primitives.cuh"
#include "device/simple_primitives.cuh"

namespace hora::device {

// Only the byte-typed summing kernel runs all-gather and broadcast: they
// move bytes whatever their element type (device_plan.h, kCopyingSpec, and
// the executor checks each launch against it); the other kernels leave those
// schedules out.
template <typename Math>
inline constexpr bool kRunsCopies =
    std::is_same_v<Math, ElementMath<std::uint8_t, kernels::FuncSum<std::uint8_t>, kernels::FuncIdentity<std::uint8_t>,
                                     kernels::FuncIdentity<std::uint8_t>>>;

// Every block runs the launch's collectives in order, each on the FIFOs of
// its channel (a block beyond a collective's channels skips it). A FIFO's
// counters live in its memory, so a collective picks its streams up where
// the one before left them, as the next kernel would. A block that stopped
// skips the rest: their peers stop through the abort lines.
template <typename T, typename Math>
__global__ void __launch_bounds__(kRingThreads) ringKernel(DeviceRingLaunch launch, Math math) {
  __shared__ BlockShared shared;
  __shared__ std::uint64_t deadline;
  recordKernelStarted(launch.queue);
  beginWaitingBlock(&shared, &deadline, launch.timeoutNs, launch.stopped, launch.failure);
  const DeviceRing& ring = *launch.ring;
  const algorithms::Ring order{ring.nranks, ring.pos, ring.ranks};
  const DeviceChannel& simple = ring.channels[blockIdx.x];
  const DeviceChannel& ll = ring.llChannels[blockIdx.x];
  for (int i = 0; i < launch.count; ++i) {
    const DeviceCollective& c = launch.collectives[i];
    if (static_cast<int>(blockIdx.x) >= c.channels) continue;
    if (i > 0) {
      // Each collective has the whole timeout, as a kernel of its own would.
      if (blockStoppedAtBarrier(&shared)) break;
      if (threadIdx.x == 0) deadline = protocols::DeviceOrdering::now() + launch.timeoutNs;
      __syncthreads();
    }
    Math m = math;
    if constexpr (std::is_same_v<decltype(m.pre), kernels::FuncPreMul<T>>) {
      if (c.preMulScalar != nullptr) m.pre = kernels::FuncPreMul<T>(*static_cast<const T*>(c.preMulScalar));
    }
    const DeviceWork work = launch.work(i);
    const algorithms::Channel channel{static_cast<int>(blockIdx.x), c.channels};
    constexpr bool kCopies = kRunsCopies<Math>;
    if (!kCopies && algorithms::isCopying(c.collective)) __trap();  // the executor's check makes this unreachable
    if (c.protocol == DeviceProtocol::LL) {
      LLRingPrimitives<T, Math> p(work, ll, &shared, m, deadline, &simple.recv);
      algorithms::runRing<kCopies>(p, c.collective, order, channel, c.root, c.count, c.chunk, c.align);
    } else {
      SimpleRingPrimitives<T, Math> p(work, simple, &shared, m, deadline, &ll.recv);
      algorithms::runRing<kCopies>(p, c.collective, order, channel, c.root, c.count, c.chunk, c.align);
    }
  }
  // Both protocols' FIFOs: a neighbour whose call chose the other one waits there.
  endBlock(&shared, simple.send, simple.recv, ll.send, ll.recv);
  recordKernelDone(launch.queue);
}

// Launches the kernel and checks the launch's own result (cuda_check.h,
// cudaCheckCall).
template <typename T, typename Combine, typename Pre, typename Post>
void launchWith(const DeviceRingLaunch& launch, int channels, cudaStream_t stream, Pre pre, Post post) {
  using Math = ElementMath<T, Combine, Pre, Post>;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(channels));
  config.blockDim = dim3(kRingThreads);
  config.stream = stream;
  cudaCheckCall(cudaLaunchKernelEx(&config, ringKernel<T, Math>, launch, Math{pre, post}), "launching a ring kernel");
}

// Loads every kernel of element type T now (ring_launch.h says why).
template <typename T>
void preloadRingKernelsAs() {
  using namespace kernels;
  using I = FuncIdentity<T>;
  cudaFuncAttributes attributes{};
  const char* what = "loading the ring kernels (cudaFuncGetAttributes)";
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncSum<T>, I, I>>), what);
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncProd<T>, I, I>>), what);
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncMax<T>, I, I>>), what);
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncMin<T>, I, I>>), what);
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncSum<T>, FuncPreMul<T>, I>>), what);
  cudaCheckCall(cudaFuncGetAttributes(&attributes, ringKernel<T, ElementMath<T, FuncSum<T>, I, FuncPostDiv<T>>>), what);
}

// Blocks of T's pre-multiplying kernel one multiprocessor keeps resident.
template <typename T>
int ringBlocksPerMultiprocessorAs() {
  using namespace kernels;
  int blocks = 0;
  cudaCheckCall(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &blocks, ringKernel<T, ElementMath<T, FuncSum<T>, FuncPreMul<T>, FuncIdentity<T>>>, kRingThreads, 0),
                "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

// One kernel per reduction kind of element type T (ring_launch.h).
template <typename T>
void launchRingAs(const kernels::ReduceSpec& spec, const DeviceRingLaunch& launch, int channels,
                  cudaStream_t stream) {
  using namespace kernels;
  const FuncIdentity<T> identity;
  switch (spec.kind) {
    case ReduceKind::Sum: return launchWith<T, FuncSum<T>>(launch, channels, stream, identity, identity);
    case ReduceKind::Prod: return launchWith<T, FuncProd<T>>(launch, channels, stream, identity, identity);
    case ReduceKind::Max: return launchWith<T, FuncMax<T>>(launch, channels, stream, identity, identity);
    case ReduceKind::Min: return launchWith<T, FuncMin<T>>(launch, channels, stream, identity, identity);
    case ReduceKind::PreMulSum: {
      // (A scalar left in memory replaces this one as the kernel starts.)
      T scalar;
      static_assert(sizeof(T) <= sizeof(spec.scalarBits));
      std::memcpy(&scalar, &spec.scalarBits, sizeof(T));  // the low bytes (little-endian)
      return launchWith<T, FuncSum<T>>(launch, channels, stream, FuncPreMul<T>(scalar), identity);
    }
    case ReduceKind::SumPostDiv:
      return launchWith<T, FuncSum<T>>(launch, channels, stream, identity, FuncPostDiv<T>(spec.scalarBits));
  }
}

}  // namespace hora::device

// Instantiates the entry points of ring_launch.h for element type T, in the
// one file that compiles T's kernels (ring_kernels_*.cu).
#define HORA_RING_KERNELS_OF(T)                                                                        \
  template void launchRingAs<T>(const kernels::ReduceSpec&, const DeviceRingLaunch&, int, cudaStream_t); \
  template void preloadRingKernelsAs<T>();                                                             \
  template int ringBlocksPerMultiprocessorAs<T>();
