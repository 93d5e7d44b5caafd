// Device memory for ncclMemAlloc from CUDA's virtual memory management
// (cuMemCreate, cuMemMap), as NCCL gives it: physical memory whose handle
// can be exported as a POSIX file descriptor and passed to another process
// over a Unix socket (cudaMalloc memory is shareable only by cudaIpc
// handles), mapped readable and writable by its GPU and by every GPU with
// peer access to it. Built with CUDA only.
#pragma once

#include <cstddef>

namespace hora::device {

// `bytes` (rounded up to the allocation granularity) on CUDA device
// `device`, or null where cuMem cannot give them: the runtime or driver
// lacks it, the device has no virtual memory management or no
// file-descriptor handles, `bytes` is 0, or NCCL_CUMEM_ENABLE=0 (the
// caller then uses cudaMalloc). Throws hora::Error naming the size and
// CUDA's reason where the device has no room.
void* allocateVmm(std::size_t bytes, int device);

// Frees memory that allocateVmm gave and returns true; false, doing
// nothing, for any other pointer. It does not wait for the device (NVIDIA's
// ncclMemFree of cuMem memory does not either; cudaFree does): the caller
// must have waited for the work that uses the memory.
bool freeVmm(void* memory);

// A new file descriptor for the physical memory behind `memory` (the start
// of what allocateVmm gave), which the caller closes; -1 for other memory.
// Another process imports it with cuMemImportFromShareableHandle.
int exportVmm(const void* memory);

}  // namespace hora::device
