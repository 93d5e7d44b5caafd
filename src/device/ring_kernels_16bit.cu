// The ring kernels for the 16-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
HORA_RING_KERNELS_OF(float16)
HORA_RING_KERNELS_OF(bfloat16)
}  // namespace hora::device
