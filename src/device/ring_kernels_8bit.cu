// The ring kernels for the 8-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
HORA_RING_KERNELS_OF(std::int8_t)
HORA_RING_KERNELS_OF(std::uint8_t)
HORA_RING_KERNELS_OF(fp8_e4m3)
HORA_RING_KERNELS_OF(fp8_e5m2)
}  // namespace hora::device
