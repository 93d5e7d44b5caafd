// The CUDA kernels behind reduceDevice: the loops of reduce_loops.h, on the
// GPU. One kernel per (type, op) pair, instantiated from the same functors
// as the host loops, so both executors compute the same bits (this file is
// compiled without fused multiply-add contraction, -fmad=false, like the
// host code, whose compiler does not contract across statements either).
//
// Memory access: when dst, local and remote are all 16-byte aligned, each
// thread moves whole 16-byte packs (one load per input, one store), which is
// what lets a reduction run at the memory's bandwidth; the last partial pack
// and unaligned buffers go element by element.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "hora/error.h"
#include "kernels/device/reduce_device.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_arguments.h"
#include "kernels/reduce_ops.h"

namespace hora::kernels {
namespace {

constexpr int kThreadsPerBlock = 512;
constexpr int kMaxBlocks = 1024;
constexpr std::size_t kPackBytes = 16;

template <typename T, typename Combine, typename Pre, typename Post>
struct ElementOp {
  Pre pre;
  Post post;
  bool hasRemote;
  __device__ T operator()(T local, T remote) const {
    using A = Arithmetic<T>;
    auto value = pre.apply(A::load(local));
    if (hasRemote) value = Combine::apply(value, A::load(remote));
    return A::store(post.apply(value));
  }
};

// A 16-byte pack of elements, moved with one vector load or store.
template <typename T>
union Pack {
  uint4 raw;
  T elements[kPackBytes / sizeof(T)];
};

template <typename T, typename Op>
__global__ void reduceKernel(T* dst, const T* local, const T* remote, std::size_t count, Op op,
                             bool packed) {
  constexpr std::size_t kPerPack = kPackBytes / sizeof(T);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t done = 0;
  if (packed) {
    const std::size_t packs = count / kPerPack;
    const auto* localPacks = reinterpret_cast<const uint4*>(local);
    const auto* remotePacks = reinterpret_cast<const uint4*>(remote);
    auto* dstPacks = reinterpret_cast<uint4*>(dst);
    for (std::size_t p = first; p < packs; p += stride) {
      Pack<T> a, b, out;
      a.raw = localPacks[p];
      if (remote != nullptr) b.raw = remotePacks[p];
#pragma unroll
      for (std::size_t e = 0; e < kPerPack; ++e) out.elements[e] = op(a.elements[e], b.elements[e]);
      dstPacks[p] = out.raw;
    }
    done = packs * kPerPack;
  }
  for (std::size_t i = done + first; i < count; i += stride)
    dst[i] = op(local[i], remote != nullptr ? remote[i] : T{});
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kPackBytes == 0;
}

template <typename T, typename Combine, typename Pre, typename Post>
void launch(const void* dst, const void* local, const void* remote, std::size_t count, Pre pre,
            Post post, cudaStream_t stream) {
  if constexpr (std::is_same_v<Pre, FuncIdentity<T>> && std::is_same_v<Post, FuncIdentity<T>>) {
    if (remote == nullptr) {
      // Nothing to compute: a copy, bit for bit as on the host.
      if (dst != local)
        cudaMemcpyAsync(const_cast<void*>(dst), local, count * sizeof(T), cudaMemcpyDefault,
                        stream);
      return;
    }
  }
  const bool packed =
      aligned16(dst) && aligned16(local) && (remote == nullptr || aligned16(remote));
  const std::size_t items = packed ? count / (kPackBytes / sizeof(T)) + 1 : count;
  const auto blocks = static_cast<unsigned>(
      std::min<std::size_t>(kMaxBlocks, (items + kThreadsPerBlock - 1) / kThreadsPerBlock));
  ElementOp<T, Combine, Pre, Post> op{pre, post, remote != nullptr};
  reduceKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(
      static_cast<T*>(const_cast<void*>(dst)), static_cast<const T*>(local),
      static_cast<const T*>(remote), count, op, packed);
}

template <typename T>
T scalarOf(std::uint64_t bits) {
  T value;
  static_assert(sizeof(T) <= sizeof(bits));
  std::memcpy(&value, &bits, sizeof(T));  // the low bytes (little-endian)
  return value;
}

template <typename T>
void reduceAs(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
              std::size_t count, bool finalize, cudaStream_t stream) {
  const FuncIdentity<T> identity;
  switch (spec.kind) {
    case ReduceKind::Sum:
      return launch<T, FuncSum<T>>(dst, local, remote, count, identity, identity, stream);
    case ReduceKind::Prod:
      return launch<T, FuncProd<T>>(dst, local, remote, count, identity, identity, stream);
    case ReduceKind::Max:
      return launch<T, FuncMax<T>>(dst, local, remote, count, identity, identity, stream);
    case ReduceKind::Min:
      return launch<T, FuncMin<T>>(dst, local, remote, count, identity, identity, stream);
    case ReduceKind::PreMulSum:
      return launch<T, FuncSum<T>>(dst, local, remote, count,
                                   FuncPreMul<T>(scalarOf<T>(spec.scalarBits)), identity, stream);
    case ReduceKind::SumPostDiv:
      if (finalize)
        return launch<T, FuncSum<T>>(dst, local, remote, count, identity,
                                     FuncPostDiv<T>(spec.scalarBits), stream);
      return launch<T, FuncSum<T>>(dst, local, remote, count, identity, identity, stream);
  }
}

}  // namespace

void reduceDevice(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                  std::size_t count, bool finalize, DeviceStream stream) {
  checkReduceArguments("reduceDevice", spec, dst, local, remote, count);
  if (count == 0) return;
  switch (spec.type) {
    case DataType::Int8:
      reduceAs<std::int8_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Uint8:
      reduceAs<std::uint8_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Int32:
      reduceAs<std::int32_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Uint32:
      reduceAs<std::uint32_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Int64:
      reduceAs<std::int64_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Uint64:
      reduceAs<std::uint64_t>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Float16:
      reduceAs<float16>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Float32:
      reduceAs<float>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Float64:
      reduceAs<double>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Bfloat16:
      reduceAs<bfloat16>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Float8e4m3:
      reduceAs<fp8_e4m3>(spec, dst, local, remote, count, finalize, stream);
      break;
    case DataType::Float8e5m2:
      reduceAs<fp8_e5m2>(spec, dst, local, remote, count, finalize, stream);
      break;
  }
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(ErrorKind::Cuda, std::string("reduceDevice: kernel launch failed: ") +
                                       cudaGetErrorName(status) + ": " +
                                       cudaGetErrorString(status));
}

}  // namespace hora::kernels
