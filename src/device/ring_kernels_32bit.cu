// The ring kernels for the 32-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
HORA_RING_KERNELS_OF(std::int32_t)
HORA_RING_KERNELS_OF(std::uint32_t)
HORA_RING_KERNELS_OF(float)
}  // namespace hora::device
