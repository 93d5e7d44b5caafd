// CUDA runtime results as hora errors: the call that failed and CUDA's own
// name and text for the result. For host code of the CUDA executor.
#pragma once

#include <cuda_runtime.h>

namespace hora::device {

// Throws hora::Error(System) naming `what` unless `result` is cudaSuccess.
void cudaCheck(cudaError_t result, const char* what);

}  // namespace hora::device
