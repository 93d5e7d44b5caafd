// HORA_HOST_DEVICE marks functions that run both on the CPU and in CUDA
// kernels. Under nvcc (or clang in CUDA mode) it expands to
// `__host__ __device__`; in plain C++ it expands to nothing, so headers that
// use it compile without any CUDA header.
//
// HORA_DEVICE_INLINE asks nvcc to inline a function into its kernel whatever
// its inliner's estimate: a device function left as a call takes the
// objects it is given by address, which puts them in local memory.
#pragma once

#ifndef HORA_DEVICE_INLINE
#if defined(__CUDACC__)
#define HORA_DEVICE_INLINE __forceinline__
#else
#define HORA_DEVICE_INLINE inline
#endif
#endif

#ifndef HORA_HOST_DEVICE
#if defined(__CUDACC__)
#define HORA_HOST_DEVICE __host__ __device__
#else
#define HORA_HOST_DEVICE
#endif
#endif
