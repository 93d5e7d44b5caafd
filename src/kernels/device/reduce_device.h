// Element-wise reductions on device memory: the arithmetic of the CUDA
// executor, with exactly the semantics of reduceHost (kernels/reduce_host.h),
// computed by the same functors (kernels/reduce_ops.h) compiled for the GPU.
//
// The header is plain C++ so that host code can call it without CUDA
// headers; the kernels are in reduce_device.cu.
#pragma once

#include <cstddef>

#include "kernels/reduce_host.h"

struct CUstream_st;

namespace hora::kernels {

using DeviceStream = CUstream_st*;  // a cudaStream_t

// Enqueues on `stream`, returns at once:
//   remote != nullptr: dst[i] = combine(pre(local[i]), remote[i])
//   remote == nullptr: dst[i] = pre(local[i])
//   then, when finalize is true, dst[i] = post(dst[i]).
// Pointers are device (or managed) memory with the element type's natural
// alignment; 16-byte aligned buffers take the vectorised path (16-byte loads
// and stores), others a scalar one. dst may equal local or remote.
// Throws hora::Error: InvalidArgument for the same invalid arguments as
// reduceHost, System (with CUDA's text) if the launch fails.
void reduceDevice(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                  std::size_t count, bool finalize, DeviceStream stream);

}  // namespace hora::kernels
