// Launching the point-to-point kernel (peer_kernel.cu) from host code that
// needs no CUDA header.
#pragma once

#include "device/device_work.h"

struct CUstream_st;

namespace hora::device {

// Enqueues `work` on `stream`, one thread block per op, and returns at once.
// Throws hora::Error(System) if the launch fails.
void launchPeers(const DevicePeerWork& work, CUstream_st* stream);

// Loads the kernel into the current device's context now (ring_launch.h's
// preloadRingKernels says why).
void preloadPeerKernel();

}  // namespace hora::device
