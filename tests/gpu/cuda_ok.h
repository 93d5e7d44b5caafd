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
