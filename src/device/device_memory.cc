#include "device/device_memory.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>

#include "device/cuda_check.h"
#include "device/driver_api.h"
#include "device/vmm_memory.h"

namespace hora::device {

namespace {

// Whether the calling thread has a current CUDA context. Where the driver
// cannot say (a runtime before CUDA 12.5 gives no entry points), it is
// taken to have one, so that the caller's device is restored as before.
bool hasCurrentContext() {
  static auto* const getCurrent = driverFunction<CUresult(CUcontext*)>("cuCtxGetCurrent");
  if (getCurrent == nullptr) return true;
  CUcontext context = nullptr;
  return getCurrent(&context) == CUDA_SUCCESS && context != nullptr;
}

}  // namespace

DeviceScope::DeviceScope(int device) {
  // Asked before cudaGetDevice, which answers 0 on a thread that never
  // chose a device (and makes no context for it).
  const bool hadContext = hasCurrentContext();
  cudaCheck(cudaGetDevice(&previous_), "cudaGetDevice");
  switched_ = previous_ != device;
  if (switched_) cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  restores_ = switched_ && hadContext;
}

DeviceScope::~DeviceScope() {
  // A failed restore is hora's error, not one to leave pending for the
  // program's next cudaGetLastError.
  if (restores_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
}

bool isDeviceMemory(const void* pointer) {
  if (pointer == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // a host pointer where CUDA has no device: not an error to keep
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

bool isDeviceReadable(const void* pointer, int device) {
  if (pointer == nullptr) return false;
  DeviceScope scope(device);  // a pinned buffer's device address is per device
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  switch (attributes.type) {
    case cudaMemoryTypeManaged: return true;
    case cudaMemoryTypeDevice: return attributes.device == device;
    // Read through its device address, which unified addressing makes the
    // same as its host address.
    case cudaMemoryTypeHost: return attributes.devicePointer == pointer;
    default: return false;
  }
}

bool exportsDmabuf(int device) {
  // A driver attribute the runtime does not name.
  auto* getDevice = driverFunction<CUresult(CUdevice*, int)>("cuDeviceGet");
  auto* getAttribute = driverFunction<CUresult(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  CUdevice handle = 0;
  int supported = 0;
  return getDevice != nullptr && getAttribute != nullptr && getDevice(&handle, device) == CUDA_SUCCESS &&
         getAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, handle) == CUDA_SUCCESS && supported != 0;
}

int deviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string pciBusIdOf(int device) {
  char busId[32] = {};
  if (cudaDeviceGetPCIBusId(busId, sizeof(busId), device) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return busId;
}

int currentDevice() {
  if (deviceCount() == 0) return -1;
  int device = -1;
  return cudaGetDevice(&device) == cudaSuccess ? device : -1;
}

void* allocateDeviceMemory(std::size_t bytes) {
  int device = 0;
  cudaCheck(cudaGetDevice(&device), "cudaGetDevice");
  // The driver's cuMem calls act in the current context, which a program
  // that has not used the device yet does not have: this makes it.
  cudaCheck(cudaFree(nullptr), "initialising the CUDA context (cudaFree(0))");
  if (void* mapped = allocateVmm(bytes, device)) return mapped;
  void* memory = nullptr;
  const std::string what = "allocating " + std::to_string(bytes) + " bytes of device memory (cudaMalloc)";
  cudaCheck(cudaMalloc(&memory, bytes), what.c_str());
  return memory;
}

void freeDeviceMemory(void* memory) {
  if (freeVmm(memory)) return;
  cudaCheck(cudaFree(memory), "freeing device memory (cudaFree)");
}

void copyToHost(void* host, const void* from, std::size_t bytes) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, from) != cudaSuccess) cudaGetLastError();  // host memory CUDA never saw
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    std::memcpy(host, from, bytes);
    return;
  }
  std::optional<DeviceScope> owner;
  if (attributes.type == cudaMemoryTypeDevice) owner.emplace(attributes.device);
  cudaCheck(cudaMemcpy(host, from, bytes, cudaMemcpyDefault), "copying from device memory (cudaMemcpy)");
}

}  // namespace hora::device
