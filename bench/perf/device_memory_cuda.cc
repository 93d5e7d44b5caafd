#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "device_memory.h"
#include "nccl_failure.h"

namespace hora::perf::device {
namespace {

void check(cudaError_t status, const char* what, int rank) {
  if (status == cudaSuccess) return;
  const std::string message = "rank " + std::to_string(rank) + ": " + what + " failed: " +
                              cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  failAndExit(message.c_str());
}

}  // namespace

int count() {
  int devices = 0;
  // No driver or no GPU: CUDA says so here, and hora-perf uses host memory.
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return devices;
}

std::string describe(int device) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties", -1);
  char text[320];
  std::snprintf(text, sizeof(text), "[%04x:%02x:%02x] %s", properties.pciDomainID, properties.pciBusID,
                properties.pciDeviceID, properties.name);
  return text;
}

void use(int device, int rank) { check(cudaSetDevice(device), "cudaSetDevice", rank); }

void* allocate(std::size_t bytes, int rank) {
  void* memory = nullptr;
  check(cudaMalloc(&memory, bytes), "cudaMalloc", rank);
  return memory;
}

void release(void* memory) { cudaFree(memory); }

void copyToDevice(void* device, const void* host, std::size_t bytes, int rank) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device", rank);
  // From pageable memory the copy may return before its last DMA lands, and
  // the collectives' non-blocking streams are not ordered after the legacy
  // default stream that DMA belongs to. Waiting for that stream alone (not
  // the device) leaves other ranks' running collectives alone.
  check(cudaStreamSynchronize(cudaStreamLegacy), "waiting for the upload (cudaStreamSynchronize)", rank);
}

void copyToHost(void* host, const void* device, std::size_t bytes, int rank) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device", rank);
}

cudaStream_t createStream(int rank) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", rank);
  return stream;
}

void destroyStream(cudaStream_t stream) {
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void synchronize(cudaStream_t stream, int rank) {
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize", rank);
}

}  // namespace hora::perf::device
