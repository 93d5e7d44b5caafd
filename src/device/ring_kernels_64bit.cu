// The ring kernels for the 64-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
template void launchRingAs<std::int64_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<std::uint64_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<double>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void preloadRingKernelsAs<std::int64_t>();
template void preloadRingKernelsAs<std::uint64_t>();
template void preloadRingKernelsAs<double>();
template int ringBlocksPerMultiprocessorAs<std::int64_t>();
template int ringBlocksPerMultiprocessorAs<std::uint64_t>();
template int ringBlocksPerMultiprocessorAs<double>();
}  // namespace hora::device
