// launchRing: the element type's kernels (ring_kernels_*.cu), which check
// their own launch.
#include "device/ring_launch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/dtypes.h"

namespace hora::device {

void launchRing(const kernels::ReduceSpec& spec, const DeviceRingLaunch& launch, int channels, CUstream_st* stream) {
  using namespace kernels;
  switch (spec.type) {
    case DataType::Int8: launchRingAs<std::int8_t>(spec, launch, channels, stream); break;
    case DataType::Uint8: launchRingAs<std::uint8_t>(spec, launch, channels, stream); break;
    case DataType::Int32: launchRingAs<std::int32_t>(spec, launch, channels, stream); break;
    case DataType::Uint32: launchRingAs<std::uint32_t>(spec, launch, channels, stream); break;
    case DataType::Int64: launchRingAs<std::int64_t>(spec, launch, channels, stream); break;
    case DataType::Uint64: launchRingAs<std::uint64_t>(spec, launch, channels, stream); break;
    case DataType::Float16: launchRingAs<float16>(spec, launch, channels, stream); break;
    case DataType::Float32: launchRingAs<float>(spec, launch, channels, stream); break;
    case DataType::Float64: launchRingAs<double>(spec, launch, channels, stream); break;
    case DataType::Bfloat16: launchRingAs<bfloat16>(spec, launch, channels, stream); break;
    case DataType::Float8e4m3: launchRingAs<fp8_e4m3>(spec, launch, channels, stream); break;
    case DataType::Float8e5m2: launchRingAs<fp8_e5m2>(spec, launch, channels, stream); break;
  }
}

void preloadRingKernels() {
  preloadRingKernelsAs<std::int8_t>();
  preloadRingKernelsAs<std::uint8_t>();
  preloadRingKernelsAs<std::int32_t>();
  preloadRingKernelsAs<std::uint32_t>();
  preloadRingKernelsAs<std::int64_t>();
  preloadRingKernelsAs<std::uint64_t>();
  preloadRingKernelsAs<float16>();
  preloadRingKernelsAs<float>();
  preloadRingKernelsAs<double>();
  preloadRingKernelsAs<bfloat16>();
  preloadRingKernelsAs<fp8_e4m3>();
  preloadRingKernelsAs<fp8_e5m2>();
}

int ringBlocksPerMultiprocessor() {
  // The largest kernels: 8-byte elements, and fp8 with its conversions.
  return std::min(ringBlocksPerMultiprocessorAs<double>(), ringBlocksPerMultiprocessorAs<fp8_e4m3>());
}

}  // namespace hora::device
