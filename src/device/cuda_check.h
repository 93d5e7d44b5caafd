// CUDA runtime results as hora errors: the call that failed and CUDA's own
// name and text for the result. For host code of the CUDA executor.
#pragma once

#include <cuda_runtime.h>

namespace hora::device {

// Throws hora::Error(System) naming `what` unless `result` is cudaSuccess.
void cudaCheck(cudaError_t result, const char* what);

// cudaCheck for a call whose result is checked where it is made: a kernel
// launch, a kernel's load. A failed call also leaves its error as the
// thread's last error, which is hora's, reported here: it is cleared, so
// that the program's next cudaGetLastError does not report it again. (A
// launch is never checked through cudaGetLastError, which would take an
// earlier error of the program, or one hora ignored, for the launch's, and
// clear the program's pending error.)
void cudaCheckCall(cudaError_t result, const char* what);

}  // namespace hora::device
