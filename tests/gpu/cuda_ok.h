// CUDA_OK(call): a GoogleTest assertion that a CUDA runtime call succeeded,
// naming the call and CUDA's text for the error.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define CUDA_OK(call)                                                                \
  do {                                                                               \
    cudaError_t status_ = (call);                                                    \
    ASSERT_EQ(status_, cudaSuccess) << #call << ": " << cudaGetErrorString(status_); \
  } while (0)

// Waits until every upload has landed. A cudaMemcpy from pageable host
// memory (and a cudaMemset) may return before the device has finished it;
// that work belongs to the legacy default stream, which the ranks'
// non-blocking streams do not wait for, so a collective enqueued right
// after could read the buffer early (a one-rank call or a send to itself is
// a cudaMemcpyAsync that starts at once). Programs that hand such buffers
// to NCCL on non-blocking streams need the same wait. It also waits for
// every blocking stream of the process; the tests' streams are all
// non-blocking, so it never waits for a rank's collective.
#define UPLOADS_LANDED() CUDA_OK(cudaStreamSynchronize(cudaStreamLegacy))
