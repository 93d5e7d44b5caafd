// What the rest of the library asks the CUDA runtime about memory and
// devices: where a pointer lives, which device is current, and device
// memory for ncclMemAlloc. Built with CUDA only; callers guard with
// HORA_HAVE_CUDA.
#pragma once

#include <cstddef>
#include <string>

namespace hora::device {

// Whether `pointer` is memory a CUDA device owns or manages (false for host
// memory, including where CUDA has no device).
bool isDeviceMemory(const void* pointer);
// Whether a kernel can read `pointer`: device or managed memory, or host
// memory pinned by CUDA (false for plain host memory).
bool isDeviceReadable(const void* pointer);
// The calling thread's current CUDA device, or -1 where CUDA has none.
int currentDevice();
// Whether CUDA device `device` can export its memory as a dma-buf for
// another driver (a NIC) to map (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
// false where CUDA cannot say.
bool exportsDmabuf(int device);
// CUDA devices this process sees (0 where CUDA has none).
int deviceCount();
// The PCI bus id of CUDA device `device` ("0000:07:00.0"), as the topology
// names GPUs; empty where CUDA cannot say.
std::string pciBusIdOf(int device);

// `bytes` of memory on the current device, which other processes can open
// by CUDA IPC (cudaMalloc memory is). Throws hora::Error naming the size
// and CUDA's reason when the device has no room.
void* allocateDeviceMemory(std::size_t bytes);
void freeDeviceMemory(void* memory);
// Copies `bytes` from device (or managed) memory to the host, waiting for
// the copy; throws hora::Error with CUDA's reason.
void copyToHost(void* host, const void* device, std::size_t bytes);

}  // namespace hora::device
