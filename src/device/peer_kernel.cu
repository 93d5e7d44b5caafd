// The point-to-point kernel: block b moves ops[b], a send into the peer's
// FIFO for this rank or a receive from this rank's FIFO for the peer, with
// the ring kernels' Simple primitives (simple_primitives.cuh) on bytes. Sends and
// receives with one peer use two FIFOs, so they never wait for each other;
// the waits poll the abort flag and the deadline as the ring kernels' do.
#include <cstdint>

#include "device/cuda_check.h"
#include "device/peer_launch.h"
#include "device/simple_primitives.cuh"

namespace hora::device {
namespace {

using ByteCopy = ElementMath<std::uint8_t, kernels::FuncSum<std::uint8_t>, kernels::FuncIdentity<std::uint8_t>,
                             kernels::FuncIdentity<std::uint8_t>>;

__global__ void __launch_bounds__(kRingThreads) peerKernel(DevicePeerWork work) {
  __shared__ BlockShared shared;
  __shared__ std::uint64_t deadline;
  beginWaitingBlock(&shared, &deadline, work.timeoutNs, work.stopped, work.failure);
  const DevicePeerOp& op = work.ops[blockIdx.x];
  const DeviceWork view{op.in, op.out, work.failure};
  // (Point-to-point work has one protocol: no other FIFO to watch.)
  SimpleRingPrimitives<std::uint8_t, ByteCopy> p(view, work.peers[op.peer], &shared, ByteCopy{}, deadline,
                                                 nullptr);
  if (op.sending != 0) {
    p.send(op.peer, 0, op.bytes);
  } else {
    p.recv(op.peer, 0, op.bytes);
  }
  endBlock(&shared, work.peers[op.peer].send, work.peers[op.peer].recv);
  recordKernelDone(work.queue);
}

}  // namespace

void launchPeers(const DevicePeerWork& work, CUstream_st* stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(work.count));
  config.blockDim = dim3(kRingThreads);
  config.stream = stream;
  // The launch's own result (cuda_check.h, cudaCheckCall).
  cudaCheckCall(cudaLaunchKernelEx(&config, peerKernel, work), "launching the point-to-point kernel");
}

void preloadPeerKernel() {
  cudaFuncAttributes attributes{};
  cudaCheckCall(cudaFuncGetAttributes(&attributes, peerKernel), "loading the point-to-point kernel");
}

}  // namespace hora::device
