// Scalars of the reductions in an element type's own representation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/types.h"

namespace hora::core {

// `value` converted to `type` (rounded to nearest), as the low bytes of the result.
std::uint64_t scalarBits(DataType type, double value);

// Copies the `bytes` of a scalar at `from` into `to`: from device or managed
// memory through CUDA (waiting for the copy), from host memory directly.
void readScalar(void* to, const void* from, std::size_t bytes);

}  // namespace hora::core
