// What the rest of the library asks the CUDA runtime about memory and
// devices: where a pointer lives, which device is current, and device
// memory for ncclMemAlloc. Built with CUDA only; callers guard with
// HORA_HAVE_CUDA.
#pragma once

#include <cstddef>
#include <string>

namespace hora::device {

// Makes `device` current for the scope, then restores the caller's, where
// the calling thread had one: on a thread with no current context (one
// that never used CUDA, such as the threads hora makes for non-blocking
// init, groups and its C++ API, or a program's thread that only destroys
// a communicator) CUDA reports device 0, and setting device 0 back would
// make a context on GPU 0 for nothing (on every process of a job, one GPU
// each) or fail where that GPU is in exclusive-process mode. Such a
// thread keeps `device` current after the scope, as if it had chosen it.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  // Only where it switched: every call on device buffers makes one.
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
  bool restores_ = false;  // switched, and the thread had a current context before
};

// Whether `pointer` is memory a CUDA device owns or manages (false for host
// memory, including where CUDA has no device).
bool isDeviceMemory(const void* pointer);
// Whether a kernel on CUDA device `device` can read `pointer`: that
// device's memory, managed memory, or host memory pinned by CUDA (false
// for pageable host memory, and for another device's memory: peer access
// is not looked at).
bool isDeviceReadable(const void* pointer, int device);
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

// ncclMemAlloc's `bytes` of memory on the current device: cuMem memory
// whose handle another process can open from a file descriptor, mapped for
// the device and its peers, where the device supports it (vmm_memory.h),
// as NCCL gives; cudaMalloc memory otherwise, or with NCCL_CUMEM_ENABLE=0.
// Throws hora::Error naming the size and CUDA's reason when the device has
// no room.
void* allocateDeviceMemory(std::size_t bytes);
// Frees what allocateDeviceMemory gave, whichever way it came.
void freeDeviceMemory(void* memory);
// Copies `bytes` at `from` to the host: from device memory by CUDA with
// the memory's own device current (so that no other device's context is
// made), from managed memory by CUDA, waiting for the copy; from host
// memory directly. Throws hora::Error with CUDA's reason.
void copyToHost(void* host, const void* from, std::size_t bytes);

}  // namespace hora::device
