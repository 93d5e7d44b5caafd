// Launching a ring kernel (ring_kernel.cuh) for an operation's element type
// and reduction, from host code that needs no CUDA header.
#pragma once

#include "device/device_work.h"
#include "kernels/reduce_host.h"

struct CUstream_st;

namespace hora::device {

// Enqueues the kernel of `launch` on `stream` with `channels` blocks (the
// most any of its collectives uses) and returns at once. `spec` is the
// kernel's, the same for every collective of the launch; the copying
// schedules (all-gather, broadcast) take a byte-typed spec (Uint8, Sum).
// Throws hora::Error(System) if the launch fails.
void launchRing(const kernels::ReduceSpec& spec, const DeviceRingLaunch& launch, int channels, CUstream_st* stream);

// Loads every ring kernel into the current device's context. CUDA loads a
// kernel lazily, at its first launch, and loading may wait for the kernels
// running on the device; a rank's first kernel could then wait for a peer
// whose kernel cannot load until it ends. Loading them all at set-up,
// before any runs, leaves nothing to load later.
void preloadRingKernels();

// Blocks of the heaviest ring kernel one multiprocessor keeps resident.
int ringBlocksPerMultiprocessor();

// The kernels' instantiations, one file per element size (ring_kernels_*.cu)
// so that they compile in parallel. Only those files include the kernels'
// definitions: a kernel compiled into two files would be two kernels, and
// loading one would not load the other.
template <typename T>
void launchRingAs(const kernels::ReduceSpec& spec, const DeviceRingLaunch& launch, int channels,
                  CUstream_st* stream);
template <typename T>
void preloadRingKernelsAs();
template <typename T>
int ringBlocksPerMultiprocessorAs();

}  // namespace hora::device
