// HORA_HOST_DEVICE marks functions that run both on the CPU and in CUDA
// kernels. Under nvcc (or clang in CUDA mode) it expands to
// `__host__ __device__`; in plain C++ it expands to nothing, so headers that
// use it compile without any CUDA header.
#pragma once

#ifndef HORA_HOST_DEVICE
#if defined(__CUDACC__)
#define HORA_HOST_DEVICE __host__ __device__
#else
#define HORA_HOST_DEVICE
#endif
#endif
