#include "device/vmm_memory.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "device/driver_api.h"

namespace hora::device {
namespace {

// The driver's cuMem functions, looked up once.
struct VmmDriver {
  CUresult (*getDevice)(CUdevice*, int) = driverFunction<CUresult(CUdevice*, int)>("cuDeviceGet");
  CUresult (*getAttribute)(int*, CUdevice_attribute, CUdevice) =
      driverFunction<CUresult(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  CUresult (*granularity)(std::size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) =
      driverFunction<CUresult(std::size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  CUresult (*create)(CUmemGenericAllocationHandle*, std::size_t, const CUmemAllocationProp*, unsigned long long) =
      driverFunction<CUresult(CUmemGenericAllocationHandle*, std::size_t, const CUmemAllocationProp*,
                              unsigned long long)>("cuMemCreate");
  CUresult (*reserve)(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long) =
      driverFunction<CUresult(CUdeviceptr*, std::size_t, std::size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve");
  CUresult (*map)(CUdeviceptr, std::size_t, std::size_t, CUmemGenericAllocationHandle, unsigned long long) =
      driverFunction<CUresult(CUdeviceptr, std::size_t, std::size_t, CUmemGenericAllocationHandle,
                              unsigned long long)>("cuMemMap");
  CUresult (*setAccess)(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t) =
      driverFunction<CUresult(CUdeviceptr, std::size_t, const CUmemAccessDesc*, std::size_t)>("cuMemSetAccess");
  CUresult (*unmap)(CUdeviceptr, std::size_t) = driverFunction<CUresult(CUdeviceptr, std::size_t)>("cuMemUnmap");
  CUresult (*addressFree)(CUdeviceptr, std::size_t) =
      driverFunction<CUresult(CUdeviceptr, std::size_t)>("cuMemAddressFree");
  CUresult (*release)(CUmemGenericAllocationHandle) =
      driverFunction<CUresult(CUmemGenericAllocationHandle)>("cuMemRelease");
  CUresult (*exportHandle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long) =
      driverFunction<CUresult(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long)>(
          "cuMemExportToShareableHandle");
  CUresult (*errorName)(CUresult, const char**) = driverFunction<CUresult(CUresult, const char**)>("cuGetErrorName");

  bool complete() const {
    return getDevice && getAttribute && granularity && create && reserve && map && setAccess && unmap &&
           addressFree && release && exportHandle && errorName;
  }
  std::string name(CUresult result) const {
    const char* text = nullptr;
    return errorName(result, &text) == CUDA_SUCCESS && text != nullptr ? text : std::to_string(result);
  }
};

const VmmDriver& driver() {
  static const VmmDriver loaded;
  return loaded;
}

struct Allocation {
  CUmemGenericAllocationHandle handle;
  std::size_t bytes;  // reserved and mapped
};

std::mutex allocationsMutex;
std::unordered_map<std::uintptr_t, Allocation>& allocations() {
  static auto* live = new std::unordered_map<std::uintptr_t, Allocation>();  // never destroyed: used at exit
  return *live;
}

bool attribute(const VmmDriver& d, CUdevice device, CUdevice_attribute which) {
  int value = 0;
  return d.getAttribute(&value, which, device) == CUDA_SUCCESS && value != 0;
}

// The devices that may map memory of `device`: itself and its peers.
std::vector<CUmemAccessDesc> accessFor(int device) {
  std::vector<CUmemAccessDesc> access;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) cudaGetLastError();
  for (int other = 0; other < count; ++other) {
    int reaches = other == device ? 1 : 0;
    if (other != device && cudaDeviceCanAccessPeer(&reaches, other, device) != cudaSuccess) cudaGetLastError();
    if (reaches == 0) continue;
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = other;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(desc);
  }
  return access;
}

}  // namespace

void* allocateVmm(std::size_t bytes, int device) {
  if (bytes == 0 || env::getInt({"HORA_CUMEM_ENABLE", "NCCL_CUMEM_ENABLE"}, 1) == 0) return nullptr;
  const VmmDriver& d = driver();
  CUdevice handleDevice = 0;
  if (!d.complete() || d.getDevice(&handleDevice, device) != CUDA_SUCCESS ||
      !attribute(d, handleDevice, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) ||
      !attribute(d, handleDevice, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))
    return nullptr;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  // So that a NIC can register it where the driver allows (GPUDirect RDMA).
  prop.allocFlags.gpuDirectRDMACapable =
      attribute(d, handleDevice, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) ? 1 : 0;
  std::size_t step = 0;
  if (d.granularity(&step, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS || step == 0) return nullptr;
  const std::size_t size = (bytes + step - 1) / step * step;
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = d.create(&handle, size, &prop, 0);
  if (created == CUDA_ERROR_OUT_OF_MEMORY)
    fail(ErrorKind::Cuda, "allocating ", bytes, " bytes of device memory on GPU ", device,
         " (cuMemCreate): CUDA error ", d.name(created));
  if (created != CUDA_SUCCESS) {
    HORA_LOG(Info, "ncclMemAlloc: cuMemCreate of ", size, " bytes on GPU ", device, " failed (", d.name(created),
             "); using cudaMalloc");
    return nullptr;
  }
  CUdeviceptr address = 0;
  CUresult result = d.reserve(&address, size, step, 0, 0);
  bool mapped = false;
  if (result == CUDA_SUCCESS) {
    result = d.map(address, size, 0, handle, 0);
    mapped = result == CUDA_SUCCESS;
  }
  if (mapped) {
    const std::vector<CUmemAccessDesc> access = accessFor(device);
    result = d.setAccess(address, size, access.data(), access.size());
  }
  if (result != CUDA_SUCCESS) {
    if (mapped) d.unmap(address, size);
    if (address != 0) d.addressFree(address, size);
    d.release(handle);
    fail(ErrorKind::Cuda, "mapping ", bytes, " bytes of device memory on GPU ", device,
         " (cuMemAddressReserve, cuMemMap, cuMemSetAccess): CUDA error ", d.name(result));
  }
  std::lock_guard<std::mutex> lock(allocationsMutex);
  allocations()[static_cast<std::uintptr_t>(address)] = {handle, size};
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

bool freeVmm(void* memory) {
  // Under the lock throughout, so that exportVmm never exports a released
  // handle.
  std::lock_guard<std::mutex> lock(allocationsMutex);
  auto found = allocations().find(reinterpret_cast<std::uintptr_t>(memory));
  if (found == allocations().end()) return false;
  const Allocation allocation = found->second;
  const VmmDriver& d = driver();
  const auto address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(memory));
  // Unmapping waits for nothing, as NVIDIA's ncclMemFree of cuMem memory
  // does not: unlike cudaFree, which waits for the device, the memory goes
  // at once, so the program must have waited for every kernel and copy
  // that uses it (its stream, or the device) before it frees it.
  const CUresult unmapped = d.unmap(address, allocation.bytes);
  if (unmapped != CUDA_SUCCESS)  // still mapped: kept, so that a later free can try again
    fail(ErrorKind::Cuda, "freeing device memory from ncclMemAlloc (cuMemUnmap): CUDA error ", d.name(unmapped));
  allocations().erase(found);
  const CUresult freed = d.addressFree(address, allocation.bytes);
  const CUresult released = d.release(allocation.handle);
  for (const CUresult result : {freed, released})
    if (result != CUDA_SUCCESS)
      fail(ErrorKind::Cuda, "freeing device memory from ncclMemAlloc (cuMemUnmap, cuMemAddressFree, cuMemRelease): ",
           "CUDA error ", d.name(result));
  return true;
}

int exportVmm(const void* memory) {
  std::lock_guard<std::mutex> lock(allocationsMutex);  // freeVmm releases no handle meanwhile
  auto found = allocations().find(reinterpret_cast<std::uintptr_t>(memory));
  if (found == allocations().end()) return -1;
  int fd = -1;
  const VmmDriver& d = driver();
  const CUresult result = d.exportHandle(&fd, found->second.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (result != CUDA_SUCCESS)
    fail(ErrorKind::Cuda, "exporting device memory from ncclMemAlloc as a file descriptor ",
         "(cuMemExportToShareableHandle): CUDA error ", d.name(result));
  return fd;
}

}  // namespace hora::device
