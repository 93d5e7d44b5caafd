// The ring kernels for the 32-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
template void launchRingAs<std::int32_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<std::uint32_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<float>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void preloadRingKernelsAs<std::int32_t>();
template void preloadRingKernelsAs<std::uint32_t>();
template void preloadRingKernelsAs<float>();
template int ringBlocksPerMultiprocessorAs<std::int32_t>();
template int ringBlocksPerMultiprocessorAs<std::uint32_t>();
template int ringBlocksPerMultiprocessorAs<float>();
}  // namespace hora::device
