// Marks functions that compile for both the CPU and, under nvcc, the GPU.
#pragma once

#ifndef HORA_HOST_DEVICE
#ifdef __CUDACC__
#define HORA_HOST_DEVICE __host__ __device__
#else
#define HORA_HOST_DEVICE
#endif
#endif
