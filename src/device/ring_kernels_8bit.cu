// The ring kernels for the 8-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
template void launchRingAs<std::int8_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<std::uint8_t>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<fp8_e4m3>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<fp8_e5m2>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void preloadRingKernelsAs<std::int8_t>();
template void preloadRingKernelsAs<std::uint8_t>();
template void preloadRingKernelsAs<fp8_e4m3>();
template void preloadRingKernelsAs<fp8_e5m2>();
template int ringBlocksPerMultiprocessorAs<std::int8_t>();
template int ringBlocksPerMultiprocessorAs<std::uint8_t>();
template int ringBlocksPerMultiprocessorAs<fp8_e4m3>();
template int ringBlocksPerMultiprocessorAs<fp8_e5m2>();
}  // namespace hora::device
