#include "bucket_memory.h"

#include <cstring>
#include <new>
#include <string>

#include "hora/error.h"
#include "hora_config.h"
#if HORA_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace hora::ddp {

namespace {

// Cache-line alignment: a bucket never shares a line with other data, and
// vectorised loops start aligned.
constexpr std::align_val_t kAlignment{64};

class HostMemory final : public BucketMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* data = ::operator new(bytes == 0 ? 1 : bytes, kAlignment);
    std::memset(data, 0, bytes);
    return data;
  }
  void release(void* data) noexcept override { ::operator delete(data, kAlignment); }
  void zero(void* data, std::size_t bytes) override { std::memset(data, 0, bytes); }
  void copy(void* destination, const void* source, std::size_t bytes) override {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }
};

#if HORA_HAVE_CUDA
void cudaOk(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return;
  cudaGetLastError();
  throw Error(ErrorKind::Cuda, std::string("gradient buckets in device memory: ") + what + " failed: " +
                                     cudaGetErrorName(result) + " (" + cudaGetErrorString(result) + ")");
}

// Buckets on the current CUDA device. Every operation has completed on the
// device when it returns: the collectives run on the communicator's own
// stream, which does not wait for the legacy default stream, so nothing may
// be left in flight there.
class DeviceMemory final : public BucketMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* data = nullptr;
    cudaOk(cudaMalloc(&data, bytes == 0 ? 1 : bytes), "cudaMalloc");
    zero(data, bytes);
    return data;
  }
  void release(void* data) noexcept override { cudaFree(data); }
  void zero(void* data, std::size_t bytes) override {
    if (bytes == 0) return;
    cudaOk(cudaMemsetAsync(data, 0, bytes, cudaStreamLegacy), "cudaMemsetAsync");
    cudaOk(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
  }
  void copy(void* destination, const void* source, std::size_t bytes) override {
    if (bytes == 0) return;
    cudaOk(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, cudaStreamLegacy), "cudaMemcpyAsync");
    cudaOk(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
  }
};

bool haveDevice() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return devices > 0;
}
#endif

}  // namespace

BucketMemory& bucketMemoryFor(MemoryKind kind) {
  static HostMemory host;
  if (kind == MemoryKind::Host) return host;
#if HORA_HAVE_CUDA
  static DeviceMemory device;
  if (kind == MemoryKind::Device) {
    if (!haveDevice())
      throw Error(ErrorKind::InvalidUsage, "gradient buckets in device memory: this process sees no CUDA device");
    return device;
  }
#endif
  const std::string where =
      kind == MemoryKind::Device ? "device memory" : "memory kind " + std::to_string(static_cast<int>(kind));
  throw Error(ErrorKind::InvalidUsage, "gradient buckets in " + where +
                                           ": not supported by this build (host memory only: built without CUDA)");
}

}  // namespace hora::ddp
