// hora-perf's few uses of the CUDA runtime, behind plain functions so that
// the program builds the same without CUDA (device_memory_none.cc answers
// "no device"; device_memory_cuda.cc is the real one). A failing CUDA call
// reports the rank and the error and ends the process, like a failing NCCL
// call (nccl_failure.h).
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"

namespace hora::perf::device {

// 0 without CUDA or without a usable GPU.
int count();
// "[0000:19:00] NVIDIA H100 80GB HBM3", for the rank lines.
std::string describe(int device);
// Makes `device` current on the calling thread (cudaSetDevice).
void use(int device, int rank);

void* allocate(std::size_t bytes, int rank);
void release(void* memory);
void copyToDevice(void* device, const void* host, std::size_t bytes, int rank);
void copyToHost(void* host, const void* device, std::size_t bytes, int rank);

// A non-blocking stream on the current device, as nccl-tests creates.
cudaStream_t createStream(int rank);
void destroyStream(cudaStream_t stream);
// Returns when everything enqueued on `stream` has run.
void synchronize(cudaStream_t stream, int rank);

}  // namespace hora::perf::device
