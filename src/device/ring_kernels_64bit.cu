// The ring kernels for the 64-bit element types (ring_launch.h says why per size).
#include "device/ring_kernel.cuh"
#include "device/ring_launch.h"

namespace hora::device {
HORA_RING_KERNELS_OF(std::int64_t)
HORA_RING_KERNELS_OF(std::uint64_t)
HORA_RING_KERNELS_OF(double)
}  // namespace hora::device
