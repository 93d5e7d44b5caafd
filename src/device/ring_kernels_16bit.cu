// The ring kernels for the 16-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
template void launchRingAs<float16>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void launchRingAs<bfloat16>(const kernels::ReduceSpec&, const DeviceWork&, int, cudaStream_t);
template void preloadRingKernelsAs<float16>();
template void preloadRingKernelsAs<bfloat16>();
template int ringBlocksPerMultiprocessorAs<float16>();
template int ringBlocksPerMultiprocessorAs<bfloat16>();
}  // namespace hora::device
