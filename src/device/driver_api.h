// CUDA driver functions the runtime does not wrap (cuMem*, some device
// attributes), found through the runtime's entry-point lookup so that hora
// needs no link to libcuda: the runtime, linked statically, already loads
// the driver. Built with CUDA only.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

namespace hora::device {

// The driver's `name` as a function of type F, or null where the driver
// or the runtime (before CUDA 12.5) cannot give it. `version`: the CUDA
// version whose signature F is (12000: the one of CUDA 12.0).
template <typename F>
F* driverFunction(const char* name, int version = 12000) {
#if CUDART_VERSION < 12050
  (void)name;  // cudaGetDriverEntryPointByVersion came with CUDA 12.5
  (void)version;
  return nullptr;
#else
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F*>(function);
#endif
}

}  // namespace hora::device
