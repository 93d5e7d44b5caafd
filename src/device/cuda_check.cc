#include "device/cuda_check.h"

#include "base/error.h"

namespace hora::device {

void cudaCheck(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return;
  fail(ErrorKind::Cuda, what, ": CUDA error ", cudaGetErrorName(result), ": ", cudaGetErrorString(result));
}

void cudaCheckCall(cudaError_t result, const char* what) {
  if (result == cudaSuccess) return;
  cudaGetLastError();
  cudaCheck(result, what);
}

}  // namespace hora::device
